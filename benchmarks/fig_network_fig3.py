"""Figure 3 of Cyffers & Bellet, "Privacy Amplification by Decentralization" (AISTATS 2022).

Parameters and method: see benchmarks/fig_network_empirical.py (shared code).
Run: python benchmarks/fig_network_fig3.py  ->  figures/network_fig3.png
"""

from fig_network_empirical import fig3

if __name__ == "__main__":
    fig3()
