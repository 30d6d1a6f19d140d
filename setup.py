"""Build hook for the one C extension; everything else is declared in pyproject.toml.

``kafkapy.native._batchcheck`` is the per-record walk of the produce path's batch
validator.  It is optional: if it does not build, ``kafkapy.native`` falls back to
the pure-Python walk (and logs once that validation is slow).
"""
from setuptools import Extension, setup

setup(ext_modules=[
    Extension("kafkapy.native._batchcheck", ["kafkapy/native/_batchcheck.c"],
              extra_compile_args=["-O2", "-std=c99"], optional=True),
])
