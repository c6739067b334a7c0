"""One reader and writer of model files over registered dimensions (issue 23, item 3,
point 1; docs/model_files.md, "Which reader"): each layer's format is the one below
extended, a value, not a registry that an import fills."""
import json

import pytest

import mbdcore.spatial.model_file  # noqa: F401 - imported so that a registry would be filled
from mbdcore.models.model_block import ModelSystemBlock
from mbdcore.models.model_file import MODEL_FORMAT
from mbdcore.models.mechanisms import slider_crank
from mbdcore.multibody.model_file import PLANAR_FORMAT, ModelFileError
from mbdcore.multibody.system_block import SystemBlock
from mbdcore.spatial.model_file import SPATIAL_FORMAT
from mbdcore.spatial.system_block import SpatialSystemBlock
from support import EXAMPLES


def test_each_layer_extends_the_one_below_without_changing_it():
    assert PLANAR_FORMAT.dimensions.keys() == {2}          # the spatial import changed nothing
    assert SPATIAL_FORMAT.dimensions[2] is PLANAR_FORMAT.dimensions[2]
    assert MODEL_FORMAT.dimensions[2] is PLANAR_FORMAT.dimensions[2]
    assert MODEL_FORMAT.dimensions[3] is not SPATIAL_FORMAT.dimensions[3]
    assert (SystemBlock.MODEL_FORMAT, SpatialSystemBlock.MODEL_FORMAT,
            ModelSystemBlock.MODEL_FORMAT) == (PLANAR_FORMAT, SPATIAL_FORMAT, MODEL_FORMAT)


def test_a_spatial_file_is_refused_by_the_planar_format_only():
    d = json.loads((EXAMPLES / "models" / "spatial" / "double_pendulum.json").read_text())
    with pytest.raises(ModelFileError, match=r"dimension: 3 is a spatial model.*"
                                             r"mbdcore.spatial.load_model"):
        PLANAR_FORMAT.from_dict(d)
    assert SPATIAL_FORMAT.to_dict(SPATIAL_FORMAT.from_dict(d)) == \
        MODEL_FORMAT.to_dict(MODEL_FORMAT.from_dict(d))
    with pytest.raises(ModelFileError, match=r"a system of dimension 3; this writer writes "
                                             r"dimension 2"):
        PLANAR_FORMAT.to_dict(SPATIAL_FORMAT.from_dict(d))


def test_a_planar_system_is_written_alike_by_every_format():
    written = [f.to_dict(slider_crank()) for f in (PLANAR_FORMAT, SPATIAL_FORMAT, MODEL_FORMAT)]
    assert written[0] == written[1] == written[2]
