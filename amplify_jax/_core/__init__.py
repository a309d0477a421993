"""The private core, floor 0: float64 scoping and the log-space toolbox (``numerics``), validation
(``validate``), the status vocabulary (``status``), graphs (``graphs``), atomic writes (``io``), the compilation
cache (``cache``), the host path (``host``), grid values written as text (``parse``) and the registry's
declaration types (``registry``, ``domains``).  Nothing here imports a layer above; every layer may use it.

Kept import-free: the host path runs this package's ``__init__`` over NumPy stand-ins.
"""
