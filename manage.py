#!/usr/bin/env python
"""Django's command-line utility; the same entry point as the `evalsite` console script."""

from evalsite.console import main

if __name__ == "__main__":
    main()
