"""An adapter file that never finishes importing: the runtime must give up and say so."""

import time

time.sleep(3600)


class Asleep:
    pass
