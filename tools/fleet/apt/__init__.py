"""apt, as the package checks, the site repository and the lab ask it: a scratch apt state
over an OS's archive with its keyring (archive.py), and what a highstate's ``pkg`` states
ask of apt (facts.py). Below fleet/packages/ and fleet/repo/, which both use it."""
