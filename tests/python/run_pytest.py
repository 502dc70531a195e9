"""Runs one pytest file for CTest (python.<file>): exit 77 (CTest's skip) when pytest is not
installed (Debian's python3-pytest; scripts/setup.sh --with-oracle installs it)."""
import sys

try:
    import pytest
except ImportError:
    print("SKIPPED: pytest is not installed (apt-get install python3-pytest)")
    sys.exit(77)

sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", sys.argv[1]]))
