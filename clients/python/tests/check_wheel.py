"""Run by `make check-wheel` with the Python of a new venv into which only
the client's wheel was installed (not by pytest): the package imports from
that venv, reports the repository's version, brought no pandas or polars
along, and its DataFrame helpers say which package to install.

    python check_wheel.py VERSION
"""

import importlib
import importlib.util
import os
import sys

import pyarrow as pa

import sluice


def main() -> None:
    version = sys.argv[1]
    venv = os.path.realpath(sys.prefix)
    assert os.path.realpath(sluice.__file__).startswith(venv + os.sep), \
        f"sluice imported from {sluice.__file__}, not from the venv {venv}"
    assert sluice.__version__ == version, f"sluice.__version__ is {sluice.__version__}, want {version}"
    for optional in ("pandas", "polars"):
        assert importlib.util.find_spec(optional) is None, f"{optional} came with the wheel"
    batch = pa.record_batch({"op": ["insert"]})
    for helper, package in ((sluice.to_polars, "polars"), (sluice.to_pandas, "pandas")):
        try:
            helper(batch)
        except ImportError as exc:
            assert f"pip install 'sluice-client[{package}]'" in str(exc), exc
        else:
            raise AssertionError(f"{helper.__name__} without {package} raised no ImportError")
    # The engines' readers are in the wheel; without their extras they say
    # which to install, and sluice.parallel needs none.
    importlib.import_module("sluice.parallel")

    for module, extra in (("sluice.spark", "spark"), ("sluice.ray", "ray")):
        if importlib.util.find_spec(extra if extra != "spark" else "pyspark") is not None:
            continue
        try:
            importlib.import_module(module)
        except ImportError as exc:
            assert f"pip install 'sluice-client[{extra}]'" in str(exc), exc
        else:
            raise AssertionError(f"{module} imported without its extra")
    print(f"check-wheel: sluice-client {sluice.__version__} imports from its wheel alone (pyarrow {pa.__version__}); "
          "to_pandas and to_polars name the package they need")


if __name__ == "__main__":
    main()
