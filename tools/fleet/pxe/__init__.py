"""Run-time PXE boot modes (``fleet pxe``): see :mod:`fleet.pxe.state`."""
