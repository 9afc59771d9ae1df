"""Names atvoss does not control, from Python: a database URL carrying a password (in any
malformed form libpq would quote), or holding a NUL, is refused without echoing the
password; an ONNX model whose names hold bytes that are not UTF-8 is read, its names escaped
(core/utf8.hpp), instead of refused."""
import pytest

import atvoss

SECRET = "Sup3rSecretPw"


@pytest.mark.parametrize("url", [
    f"postgresql://atv:{SECRET}@[::1/atv",
    f"postgresql://atv:{SECRET}@[]/atv",
    f"postgresql://atv:{SECRET}%zz@127.0.0.1/atv",
    f"postgresql://atv@127.0.0.1/atv?password={SECRET}%00",
])
def test_a_url_with_a_password_is_refused_without_echoing_it(url):
    with pytest.raises(ValueError) as e:
        atvoss.Database(url)
    assert "database URL" in str(e.value) and SECRET not in str(e.value)


def test_a_nul_in_a_url_is_refused_not_cut_short():
    with pytest.raises(ValueError, match="NUL byte"):
        atvoss.Database("postgresql://atvoss@/atv\x00?host=evil")


def test_names_that_are_not_utf8_are_escaped(tmp_path):
    onnx = pytest.importorskip("onnx")  # python3-onnx, installed by scripts/setup.sh for the tests
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu", ["x"], ["yQQ"], name="reluQQ"), helper.make_node("Neg", ["yQQ"], ["z"], name="neg")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, [4, 64])])
    path = tmp_path / "bytes.onnx"
    path.write_bytes(helper.make_model(graph).SerializeToString().replace(b"QQ", b"\xff\xfe"))
    g = atvoss.Graph.from_onnx(path)  # refused before: the names could not become str
    assert "relu\\xFF\\xFE" in g.nodes
