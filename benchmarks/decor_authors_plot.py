"""The values of the authors' own plots of Decor Fig. 1(a) and 1(b), read from their PDFs (evidence for
figures/README.md).

Allouah et al., "The Privacy Power of Correlated Noise in Decentralized Learning" (ICML 2024), Sec. 6 says of
Fig. 1(a) (synthetic least squares) and 1(b) (a9a logistic regression) that Decor is "an order of magnitude" better
than LDP.  Our copy of the paper lost the plots; the authors' public repository (github.com/elfirdoussilab1/DECOR,
commit 68ad698, read, not copied) holds the PDFs their scripts wrote:

- (b): ``results-plot-libsvm/Loss_vs_epsilon_libsvm_model=libsvm_model_momentum=0_alpha=10.0.pdf`` (reproduce_libsvm.py,
  committed on 2024-01-31; its legend is the repository's legend.pdf).  The quantity ("Optimality gap") is train.py's
  ``server.compute_train_loss() - 0.3236``: the training loss of the users' average model minus a constant,
  averaged over their seeds, at the last evaluation (T = 5000);
- (a): ``quadratics_for_n_16/loss_epsilon/loss-n_16-d_10-lr_0.001668-clip_1.0-delta_1e-05-T_3500.pdf``
  (quadratics.py through utils/plotting.py's loss_epsilon, committed on 2024-02-01).  The quantity is
  utils/optimizers.py's consensus_distance, the users' mean squared distance to x*, averaged over the last 200 of
  T = 3500 iterations and 5 seeds, with one step size 1.668e-3 (our excess loss of (a) is 2.92 times it).

This script reads the numbers back from a PDF's vector drawing:

- the y axis (log): each y tick mark (the short line left of the axes) and its label (matplotlib mathtext: "10" with
  a small exponent, a minus glyph, "6 x" before it), fitted as y = a + b log10(value) (the largest residual is
  printed: 2.5e-7 points for the authors' file, ticks 0.06, 0.1, 0.2, 0.3);
- each curve: its markers (the PDF draws them as one form XObject moved from point to point), in the order the
  authors' script drew them ((b): reproduce_libsvm.py's ``topologies``, CDP; LDP complete, grid, ring; Decor
  complete, grid, ring; (a): loss_epsilon's CDP, then Decor and LDP on the complete graph, the ring, the grid); the
  stroke colour (tab:purple CDP, tab:orange LDP, tab:green Decor) of each is checked, and each topology must have a
  dash pattern of its own (solid complete, dashed grid, dotted ring);
- the x values: the script's budgets ((b) 3, 5, 7, 10, 15, 20, 25, 30, 40; (a) 1 and these); the marker x positions
  are checked to be affine in them.

    python benchmarks/decor_authors_plot.py PDF [--panel a|b]   (default b; prints the values and the ratios
                                                                 LDP / Decor, Decor / CDP)
"""

from __future__ import annotations

import math
import re
import sys
import zlib

import numpy as np

EPSILONS = (3, 5, 7, 10, 15, 20, 25, 30, 40)  # reproduce_libsvm.py's epsilons
CURVES = (("CDP", "complete"), ("LDP", "complete"), ("LDP", "grid"), ("LDP", "ring"),
          ("Decor", "complete"), ("Decor", "grid"), ("Decor", "ring"))  # its topologies, in the order drawn
PANELS = {"b": (EPSILONS, CURVES),
          "a": ((1,) + EPSILONS,  # quadratics.py's epsilon_grid; loss_epsilon draws CDP, then per topology
                (("CDP", "complete"), ("Decor", "complete"), ("LDP", "complete"), ("Decor", "ring"),
                 ("LDP", "ring"), ("Decor", "grid"), ("LDP", "grid")))}  # (centralized, ring, grid) Decor, LDP
COLOURS = {"CDP": (0.580, 0.404, 0.741), "LDP": (1.0, 0.498, 0.055), "Decor": (0.173, 0.627, 0.173)}  # tab:*
NUM = r"(-?[0-9.]+)"


def content(path) -> str:
    """The page's drawing: the largest Flate-compressed stream of the PDF, as text."""
    raw = open(path, "rb").read()
    best = b""
    for s in re.findall(rb"stream\r?\n(.*?)\r?\nendstream", raw, re.S):
        try:
            d = zlib.decompress(s)
        except zlib.error:
            continue
        if len(d) > len(best):
            best = d
    if not best:
        raise ValueError(f"no compressed drawing in {path}")
    return best.decode("latin-1")


def _label_value(block: str) -> float | None:
    """A mathtext tick label ("10^-1", "6 x 10^-2") from its text block: big-font digits, then the small exponent,
    made negative by a minus: a glyph form named "minus" (older matplotlib) or a non-digit character in the small
    font (newer)."""
    big, small, size, cur, minus = "", "", None, None, "minus" in block
    for m in re.finditer(r"/F[0-9]+ ([0-9.]+) Tf|\((.*?)\) Tj", block, re.S):
        if m.group(1):
            cur = float(m.group(1))
            size = cur if size is None else size
        elif cur is not None and cur >= size:
            big += m.group(2) if m.group(2).isdigit() else ""
        elif cur is not None:
            if m.group(2).isdigit():
                small += m.group(2)
            elif not small:
                minus = True
    if not big.endswith("10") or not small:
        return None
    mant = float(big[:-2]) if big[:-2] else 1.0
    return mant * 10.0 ** (-int(small) if minus else int(small))


def y_axis(text: str) -> tuple[float, float, float, list]:
    """(a, b, residual, tick values): y = a + b log10(value) from the labelled y ticks; the largest residual in
    points."""
    pts = []
    tick = re.compile(NUM + r" " + NUM + r" m\n" + NUM + r" " + NUM + r" l\n\nB\n1 w\nq\n1 0 -0 1 " + NUM + " "
                      + NUM + r" cm\nBT\n(.*?)ET", re.S)
    for m in tick.finditer(text):
        x0, y0, x1, y1 = (float(m.group(i)) for i in range(1, 5))
        if y0 != y1 or not x1 < x0:  # a y tick: horizontal, drawn leftwards from the axes
            continue
        v = _label_value(m.group(7) + text[m.end():m.end() + 400].split("Q", 1)[0])
        if v is not None:
            pts.append((y0, v))
    if len(pts) < 2:
        raise ValueError("fewer than two labelled y ticks found")
    y, v = np.array(pts).T
    b, a = np.polyfit(np.log10(v), y, 1)
    return float(a), float(b), float(np.max(np.abs(a + b * np.log10(v) - y))), sorted(v.tolist())


def curves(text: str) -> list[dict]:
    """Each marker sequence (one form XObject /Mk drawn at successive relative moves): its points, and the colour
    and dash pattern of the line stroked just before it."""
    out = []
    for name in sorted(set(re.findall(r"cm /(M[0-9]+) Do", text)), key=lambda s: int(s[1:])):
        moves = re.findall(r"1 0 0 1 " + NUM + " " + NUM + r" cm /" + name + r" Do", text)
        xy = np.cumsum(np.array(moves, dtype=float), axis=0)
        first = text.find(f"cm /{name} Do")
        before = text[:first]
        stroke = before[before.rfind(" re W n"):]  # the clip of this line's drawing, its style, its path
        rgb = re.findall(NUM + r"\s+" + NUM + r"\s+" + NUM + r"\s+RG", stroke)
        dash = re.findall(r"\[ ([0-9. ]*) \] 0 d", stroke.split("RG")[0])
        out.append(dict(marker=name, x=xy[:, 0], y=xy[:, 1], colour=tuple(float(c) for c in rgb[0]) if rgb else None,
                        dash=dash[0] if dash else ""))
    return out


def read(path, panel: str = "b") -> dict:
    """{(method, topology): values at the panel's budgets} from the authors' PDF, with the checks' numbers."""
    if panel not in PANELS:
        raise ValueError(f"Expected panel in {sorted(PANELS)}, got panel={panel!r}")
    eps, order = PANELS[panel]
    text = content(path)
    a, b, resid, ticks = y_axis(text)
    found = curves(text)
    if len(found) != len(order):
        raise ValueError(f"expected {len(order)} marker sequences, found {len(found)}")
    values, style = {}, {}
    for (method, topo), c in zip(order, found):
        if len(c["x"]) != len(eps):
            raise ValueError(f"{method} {topo}: {len(c['x'])} points, expected {len(eps)}")
        k, m = np.polyfit(eps, c["x"], 1)
        if np.max(np.abs(k * np.array(eps) + m - c["x"])) > 0.01:
            raise ValueError(f"{method} {topo}: marker x positions not affine in eps")
        if c["colour"] is None or max(abs(p - q) for p, q in zip(c["colour"], COLOURS[method])) > 0.01:
            raise ValueError(f"{method} {topo}: colour {c['colour']}, expected {COLOURS[method]}")
        values[method, topo] = 10.0 ** ((c["y"] - a) / b)
        style[method, topo] = c["dash"]
    dashes = {t: {style[m, t] for m, tt in order if tt == t} for t in ("complete", "grid", "ring")}
    if any(len(d) != 1 for d in dashes.values()) or len({d.pop() for d in dashes.values()}) != 3:
        raise ValueError(f"each topology should have one dash pattern of its own: {style}")
    return dict(values=values, y_residual=resid, y_scale=b, y_ticks=ticks, epsilons=eps, order=order)


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pdf", help="the authors' PDF of the panel")
    ap.add_argument("--panel", choices=sorted(PANELS), default="b", help="which panel the PDF draws (default b)")
    args = ap.parse_args(argv)
    r = read(args.pdf, args.panel)
    v, order = r["values"], r["order"]
    print(f"y axis from the labelled ticks {', '.join(f'{t:g}' for t in r['y_ticks'])}: {r['y_scale']:.4f} points "
          f"per decade, largest residual {r['y_residual']:.2g} points")
    print("eps   " + "  ".join(f"{m} {t}".rjust(15) for m, t in order) + "   LDP/Decor (complete, grid, ring)"
          + "   Decor/CDP (complete, grid, ring)")
    for i, e in enumerate(r["epsilons"]):
        row = "  ".join(f"{v[c][i]:15.4g}" for c in order)
        ld = ", ".join(f"{v['LDP', t][i] / v['Decor', t][i]:.2f}" for t in ("complete", "grid", "ring"))
        dc = ", ".join(f"{v['Decor', t][i] / v['CDP', 'complete'][i]:.2f}" for t in ("complete", "grid", "ring"))
        print(f"{e:<4d}  {row}   {ld}   {dc}")
    ratios = [v["LDP", t] / v["Decor", t] for t in ("complete", "grid", "ring")]
    print(f"LDP / Decor over all budgets and topologies: {min(map(np.min, ratios)):.2f}-"
          f"{max(map(np.max, ratios)):.2f}; decades spanned by the whole plot: "
          f"{math.log10(max(map(np.max, v.values())) / min(map(np.min, v.values()))):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
