"""`make check-packages`: the packages the Salt states name are real packages of each OS.

For each supported OS release and one node per role set, the highstate is rendered
in-process (tests/salt's renderer, the committed pillar/) and its apt facts are taken
from the lowstate: the packages installed (and held) and removed, the apt preferences
(pins) and the archive sources the states write. Then, against the real archive indexes
in a scratch apt state (never the machine's own apt lists or preferences):

- every name is a real package of that OS, and no installed or held one is transitional
  (its description says so, or it depends on its own name with another number, like the
  570-server packages that pull 580-server);
- the node's whole set resolves in a simulated install (`apt-get -s install`) with the
  node's own pins, and every pinned package gets a version its pin matches.

An archive that does not answer is a failure that says so.
"""
