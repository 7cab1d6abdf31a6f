"""What the scripts under scripts/ share (see common.py). A script in a subfolder imports it with

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from fdpp_scripts import common
"""
