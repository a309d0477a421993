"""The explorer: every registered bound, live, in a browser (``amplify-jax explore``).

A local web page over the bound registry (:mod:`amplify_jax.bounds`): pick a bound (grouped by paper), move its
parameters on sliders generated from their declared domains (log-scaled where a domain spans decades, integer
steps, a box for an exact value, which end means more privacy), choose the x axis and a family of curves,
overlay (pin) curves of several bounds, and solve for a parameter at a target eps or delta.  The page's state
lives in its URL, so a view can be shared and reopened.  It also reads a solved or typed (eps, delta) as the
best membership attack it allows (:func:`tpr_bound`: the true-positive rate at a false-positive rate,
Kairouz-Oh-Viswanath 2015 / Dong-Roth-Su 2019), exports what is shown (PNG drawn by matplotlib, CSV of the
curves, and the ``amplify-jax evaluate`` command and ``bounds.evaluate`` call that reproduce it:
:func:`export`), and slices the sweep stores opened with ``amplify-jax explore --sweep PATH`` (two dimensions
as curves or a heat map, the others fixed; ``_sweeps.py``).  Each legend entry names its bound's paper and
theorem in short (``"shuffle.clones — FMT 2021, Thm 3.2"``; the ``cite`` of the catalog and of each curve); a
bound with a lower value beside its upper one (``shuffle.clones``' ``lower``, ``pld.dpsgd``'s
``epsilon_lower``) is drawn as a shaded band from the lower to the upper value under the upper line; a solved
answer is marked on the plot (a point at (value, achieved) when the solved parameter is the x axis, otherwise a
line at the target; SVG id ``explore-solved``) while the other parameters stay those it was solved at.

Readable plots: each bound opens on its default view (the catalog's ``view``: its first monotone parameter
as the x axis over a range around its example value; a log y axis where the answer spans more than
:data:`~amplify_jax.explore._api.LOGY_DECADES` = 1.5 decades or is a delta: the curve's ``view.logy``); every
axis carries at least two labelled ticks at any range (``_render.log_ticks``: decades, or 1-2-5 within a decade;
``explore.js`` gives Plotly the same tick values, and recomputes them on zoom); titles wrap to at most three
lines; points whose status is not ``ok`` carry a marker of their own (``_render.STATUS_MARKERS``); a curve being
computed shows "computing… N s" (``tests/test_explore_readable.py`` renders each bound's default view and parses
its tick labels).

The page's URL parameters (``explore.js``: ``readURL`` / ``syncURL``):

==================  =============================================================================================
``token``           the launch's token (the URL the server prints); sent with every API call
``bound``           the bound's id (default ``shuffle.clones``; an unknown id shows the default, with a message)
``x``               the x-axis parameter (numeric, or ``orders`` for an RDP bound)
``lo``, ``hi``      the x range (default: the catalog's ``view``)
``points``          x values of the curve (default 200)
``logx``, ``logy``  ``1`` / ``0``: log axes (``logy`` absent: from the values, the curve's ``view.logy``)
``family``, ``fv``  a parameter drawn as a family of curves; its comma-separated values (default: a decade either
                    side of the example's)
``p.NAME``          the value of parameter ``NAME`` (a number, a graph spec, a choice, comma-separated orders)
``solve_for``       the parameter to solve for; ``target``: the target eps (or delta)
``pin``             a pinned curve: its curve request as JSON (repeatable, at most 6)
==================  =============================================================================================

The JSON interface (pure functions, no server needed; every answer is JSON, a bad request answers
``{"error": "<one line naming the parameter and the value>"}``)::

    from amplify_jax import explore

    explore.catalog()                                  # every bound grouped by paper, parameters, limits
    explore.curve("shuffle.clones", "eps0", lo=0.1, hi=10, points=200, params={"delta": 1e-6},
                  family="n", family_values=[1e4, 1e5])   # ONE bounds.evaluate call, broadcast
    explore.solve("dpsgd", "sigma", target_epsilon=1.0, params={"q": 0.01, "steps": 1000, "delta": 1e-5})
    explore.request("curve", {"bound": ..., "x": ..., ...})   # what the server receives
    explore.export({"bound": ..., "x": ..., ...})     # {"command", "python", ...} reproducing that curve
    explore.tpr_bound(epsilon=1.0, delta=1e-5, fpr=0.01)   # the attacker's largest true-positive rate

Limits (in every answer and on the page): at most :data:`MAX_POINTS` = 2000 points per curve request (x values
x family values x Rényi orders), :data:`MAX_CURVES` = 12 family values, :data:`MAX_ORDERS` = 64 orders, graphs
of at most :data:`MAX_GRAPH_USERS` = 1000 users given as specs (``ring:16``), never as paths: the explorer opens
no file of the machine but the sweep stores given to the server (``make_server(sweeps=[...])``, ``--sweep``),
which the page names by index.

The server (:func:`serve`, :func:`make_server`) is the standard library's ``HTTPServer`` on a fixed pool of
threads: nothing to install, and enough for one local user.  It answers only Hosts that are loopback addresses
or ``localhost`` and API calls carrying the launch's token (the URL it prints, ``server.page_url``), gives a
request 10 s to arrive, refuses bodies over 2 MiB or nested over 32 deep, and answers every malformed request
with a 4xx JSON line (``_server.py``).  It binds 127.0.0.1 unless told otherwise, serves its own three static
files from a fixed table (no request path reaches the file system), runs one computation at a time (a lock; at
most 32 requests wait, each at most 120 s, the others get 503 at once), answers bad input with 400 and one line,
catches anything else at its boundary (500 and one line; the traceback goes to the server's stderr) and keeps
serving.  Under load (``benchmarks/bench_explore_load.py``: 200 requests from 20 concurrent clients on
loopback, a closed-form bound, the 2-core machine shared at load average ~7) it answered every request: 0
errors, p50 522 ms, p95 1096 ms, max 2.0 s, the time of the queue behind the one computation at a time.

Tests: ``tests/test_explore.py`` (the JSON interface, export through ``amplify_jax.cli.main``, sweep slices,
the server) and ``tests/test_explore_browser.py`` (the page in Chromium through Playwright: a bound of each
paper, typed values and moved sliders, drawn values equal to ``bounds.evaluate``'s; solve, export, a sweep
store).  ``window.explorerShown`` in the page holds what the plot shows (request, traces, solve, sweep slice).

Plotting.  The page loads with no network access.  The ``plotly`` Python package ships plotly.js
(``plotly/package_data/plotly.min.js``): where it is installed the server serves that file and the page draws
with Plotly (hover, zoom, pan).  It is not a dependency of amplify_jax and is not installed here, so by default
the curves are drawn by matplotlib, already a dependency and the scientific Python standard: the page posts the
curves it shows to ``/api/render`` and inserts the SVG it gets back.  Either way no plotting engine is written or
copied here, and nothing is fetched from the internet.  (Tick labels are plain numbers, without mathtext, and a
log axis has no minor ticks: mathtext and minor ticks cost ~0.3 s per drawing; the SVG drawing now takes
~80-100 ms.)

Response time of a 200-point curve, measured with ``explore.curve(id, x, points=200)`` on this project's 2-core
CPU while other work loaded it (load average ~3.5; jax 0.10.2, CPU), median of 3 calls: "same" repeats the
request, "moved" changes one fixed parameter as a slider does (a new value, no new shape).  The explorer adds
~1-4 ms to the kernel's time (validation, JSON); through HTTP a curve adds ~5-10 ms, and matplotlib's drawing
~80-100 ms.

==================================  ============  ==========  ===========  ===============================
bound (x axis; parameter moved)     first call    warm same   warm moved   goal < 200 ms
==================================  ============  ==========  ===========  ===============================
shuffle.fmt-closed-form (eps0; n)   0.4 s         2 ms        2 ms         met
network.ring-histogram (eps0; n)    0.5 s         4 ms        4 ms         met
network.sgd (sigma; n)              2.5 s         17 ms       12 ms        met
secrdp.step (sigma_cor; sigma_unc)  0.6 s         25 ms       16 ms        met
rdp.poisson-subsampled-gaussian     3.5 s         12 ms       13 ms        met
dpsgd (sigma; q)                    35 s          257 ms      280 ms       missed under load (RDP at every
                                                                           order of the grid)
shuffle.clones (eps0; n)            14 s          456 ms      14.5 s       missed: its window width is a
                                                                           static size that follows n, so
                                                                           a new n bucket recompiles
shuffle.blanket (n; eps0)           4.6 s         458 ms      4.1 s        missed: its static window
                                                                           follows (n - 1) gamma (1 - gamma),
                                                                           gamma set by eps0
traffic.scrambler (dummies; n)      9.7 s         5.6 s       9.9 s        missed: eps by a search per
                                                                           point (Sec. IV-C); a new n
                                                                           recompiles
checkin.shuffled-upper (eps0; n)    10 s          6.4 s       10 s         missed: an exact sum over k
                                                                           per point, in a window whose
                                                                           static width follows n gamma
pld.dpsgd (sigma; q)                54 s          11.9 s      12.6 s       missed: ~55 ms a point (FFT
                                                                           composition, README)
==================================  ============  ==========  ===========  ===============================

The misses are the kernels' own cost (the same ``bounds.evaluate`` call from Python takes the same time); the
page says "computing" or, for a bound's first curve, "compiling" while it waits, with the seconds elapsed, counted
every second, and slider moves that arrive meanwhile collapse into one request.
"""

from ._api import DEFAULT_POINTS as DEFAULT_POINTS, MAX_CURVES as MAX_CURVES, MAX_GRAPH_USERS as MAX_GRAPH_USERS
from ._api import MAX_ORDERS as MAX_ORDERS, MAX_POINTS as MAX_POINTS
from ._api import catalog as catalog, curve as curve, request as request, solve as solve
from ._export import export as export
from ._operational import tpr_bound as tpr_bound
from ._render import default_view as default_view, render as render
from ._server import ExploreServer as ExploreServer, make_server as make_server, plotly_js as plotly_js
from ._server import serve as serve

# What __all__ lists (issue 29: one home per name): the JSON interface and the server.  Importable from here,
# documented, not in __all__: the limits (DEFAULT_POINTS, MAX_*), the server's class (ExploreServer, what
# make_server returns), and what the server calls (request, render, default_view, plotly_js)
__all__ = ["catalog", "curve", "solve", "export", "tpr_bound", "serve", "make_server"]
