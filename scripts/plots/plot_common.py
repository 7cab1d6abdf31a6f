"""What the plot scripts share: matplotlib without a display, or a clear message without it."""
import sys


def pyplot(tool):
    """matplotlib.pyplot on the Agg backend, or None (after saying why) when it is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"{tool}: matplotlib is not installed (pip install matplotlib); no plot made",
              file=sys.stderr)
        return None
    return plt
