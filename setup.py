# The package list lives here only because the shipped profiles and settings
# in ./configs are installed as the subpackage ``kerntune.configs``, which
# pyproject.toml's automatic discovery cannot express.
from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["kerntune", "kerntune.*"]) + ["kerntune.configs"],
    package_dir={"kerntune.configs": "configs"},
)
