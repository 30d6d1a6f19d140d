"""Build hook for the one C extension and the package list; the rest is in pyproject.toml.

``kafkapy.native._batchcheck`` is the per-record walk of the produce path's batch
validator.  It is optional: if it does not build, ``kafkapy.native`` falls back to
the pure-Python walk (and logs once that validation is slow).
"""
from setuptools import Extension, find_packages, setup

# kafkapy.schemas is the top-level protocol/ folder (pyproject's package-dir): no package
# finder sees a mapped folder, so it is named here, or a wheel would lack our schemas.
setup(packages=find_packages(include=["kafkapy*"]) + ["kafkapy.schemas"], ext_modules=[
    Extension("kafkapy.native._batchcheck", ["kafkapy/native/_batchcheck.c"],
              extra_compile_args=["-O2", "-std=c99"], optional=True),
])
