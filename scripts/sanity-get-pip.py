"""Offline stand-in for the get-pip script ansible-test downloads (ci-files.testing.ansible.com is unreachable).

scripts/sanity.sh puts this file where ansible-test caches that script (~/.ansible/test/cache/get_pip_X_Y.py, under
a private HOME). ansible-test runs it with the interpreter of a new, empty virtual environment and pip's install
options; it installs pip from the configured package index with the pip wheel that Python itself bundles for
ensurepip. get-pip's own flags (--no-setuptools, --no-wheel) mean nothing to pip install and are dropped.
"""
import glob
import os
import sys


def bundled_pip_wheel():
    """Path of the newest pip wheel this interpreter bundles (CPython's ensurepip, or Debian's python-wheels)."""
    import ensurepip  # pylint: disable=import-outside-toplevel

    candidates = glob.glob(os.path.join(os.path.dirname(ensurepip.__file__), "_bundled", "pip-*.whl"))
    candidates += glob.glob("/usr/share/python-wheels/pip-*.whl")
    if not candidates:
        sys.exit("sanity-get-pip: no bundled pip wheel for %s (install python3-venv)" % sys.executable)

    def version(path):
        return tuple(int(part) for part in os.path.basename(path).split("-")[1].split(".") if part.isdigit())

    return max(candidates, key=version)


def main():
    sys.path.insert(0, bundled_pip_wheel())
    from pip._internal.cli.main import main as pip_main  # pylint: disable=import-outside-toplevel

    args = [arg for arg in sys.argv[1:] if arg not in ("--no-setuptools", "--no-wheel")]
    return pip_main(["install"] + args)


if __name__ == "__main__":
    sys.exit(main())
