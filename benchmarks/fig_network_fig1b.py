"""Figure 1(b) of Cyffers & Bellet, "Privacy Amplification by Decentralization" (AISTATS 2022).

Parameters and method: see benchmarks/fig_network_empirical.py (shared code).
Run: python benchmarks/fig_network_fig1b.py  ->  figures/network_fig1b.png
"""

from fig_network_empirical import fig1b

if __name__ == "__main__":
    fig1b()
