"""The wheel carries a compiled library, so it is tagged for this platform
and Python, not as pure Python."""
from setuptools import setup
from setuptools.dist import Distribution


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


setup(distclass=BinaryDistribution)
