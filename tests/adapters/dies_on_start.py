"""An adapter file whose import fails: every runtime must name it and the fix."""

raise RuntimeError("this adapter refuses to start")


class Dead:
    pass
