"""The wheel carries a compiled library, so it is tagged for this platform,
not as pure Python. It holds no CPython extension module: querypilot.so is a
SQLite extension that sqlite3 loads, the same file for every Python 3, so the
wheel is tagged py3-none-<platform> (any Python 3, no ABI)."""
from setuptools import setup
from setuptools.dist import Distribution

try:  # setuptools 70.1 and later carry bdist_wheel themselves
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # Debian 12's setuptools 66 with python3-wheel
    from wheel.bdist_wheel import bdist_wheel


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


class AnyPython3Wheel(bdist_wheel):
    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(distclass=BinaryDistribution, cmdclass={"bdist_wheel": AnyPython3Wheel})
