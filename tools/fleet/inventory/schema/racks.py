"""``racks:`` and where a device sits in one."""


from pydantic import Field, StrictInt

from fleet.inventory.schema.base import Model, Name

MAX_RACK_U = 60
MAX_HEIGHT_U = 20


class Rack(Model):
    """A rack of the site: devices are placed in it by unit (U1 at the bottom)."""

    height_u: StrictInt = Field(default=42, ge=1, le=MAX_RACK_U)
    """rack units it holds, U1 (bottom) to U<height_u> (top)"""
    row: Name | None = None
    """the row of racks it stands in: the rack elevations draw each row on a line of its own"""


class Place(Model):
    """Where one device sits: its rack and its lowest unit."""

    rack: Name
    """the racks entry it is in"""
    unit: StrictInt = Field(ge=1, le=MAX_RACK_U)
    """its lowest rack unit (U1 is the bottom); it takes height_u units from there up"""


class GroupPlace(Model):
    """Where a node group's machines sit: stacked upward from first_unit, in its racks in
    order, per_rack to a rack (``nodes.<name>.place`` overrides one machine)."""

    racks: list[Name] = Field(min_length=1, max_length=1000)
    """the racks entries its machines fill, in order"""
    first_unit: StrictInt = Field(default=1, ge=1, le=MAX_RACK_U)
    """unit of the lowest machine in each rack; the next sits height_u (the profile's) above"""
    per_rack: StrictInt | None = Field(default=None, ge=1, le=MAX_RACK_U)
    """machines to a rack before the next one (null: as many as fit)"""
