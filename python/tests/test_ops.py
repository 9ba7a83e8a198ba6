"""Single-op models: Osprey against ONNX Runtime on seeded random inputs with odd shapes."""
import numpy as np
import pytest

from conftest import randn, run_both, single_op


def test_conv(rng, tmp_path):
    x = randn(rng, 2, 3, 13, 11)
    w = randn(rng, 8, 3, 3, 3)
    b = randn(rng, 8)
    model = single_op("Conv", {"x": x}, initializers={"w": w, "b": b}, pads=[1, 0, 1, 2], strides=[2, 1],
                      dilations=[1, 2])
    run_both(model, {"x": x}, tmp_path)


def test_conv_grouped_weights_as_input(rng):
    x = randn(rng, 1, 6, 9, 7)
    w = randn(rng, 6, 2, 3, 3)
    run_both(single_op("Conv", {"x": x, "w": w}, group=3, auto_pad="SAME_UPPER"), {"x": x, "w": w})


def test_gemm(rng):
    a = randn(rng, 13, 7)
    b = randn(rng, 5, 13)
    c = randn(rng, 5)
    model = single_op("Gemm", {"a": a}, initializers={"b": b, "c": c}, transA=1, transB=1, alpha=0.5, beta=2.0)
    run_both(model, {"a": a})


def test_matmul_batched_broadcast(rng):
    a = randn(rng, 2, 1, 7, 13)
    b = randn(rng, 3, 13, 5)
    run_both(single_op("MatMul", {"a": a, "b": b}), {"a": a, "b": b})


@pytest.mark.parametrize("axis", [-1, 1])
def test_softmax(rng, axis):
    x = randn(rng, 3, 7, 13) * 4
    run_both(single_op("Softmax", {"x": x}, axis=axis), {"x": x})


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.int32, np.float64])
def test_add_broadcast(rng, dtype):
    a = (randn(rng, 3, 1, 5) * 10).astype(dtype)
    b = (randn(rng, 4, 1) * 10).astype(dtype)
    run_both(single_op("Add", {"a": a, "b": b}), {"a": a, "b": b})


def test_transpose(rng):
    x = randn(rng, 2, 3, 5, 7)
    run_both(single_op("Transpose", {"x": x}, perm=[2, 0, 3, 1]), {"x": x})


def test_reshape(rng):
    x = randn(rng, 2, 3, 4, 5)
    run_both(single_op("Reshape", {"x": x}, initializers={"s": np.array([0, -1, 5], np.int64)}), {"x": x})


def test_concat(rng):
    feed = {"a": randn(rng, 2, 3, 5), "b": randn(rng, 2, 1, 5), "c": randn(rng, 2, 4, 5)}
    run_both(single_op("Concat", feed, axis=1), feed)


@pytest.mark.parametrize("mode,transform", [("linear", "half_pixel"), ("nearest", "asymmetric"),
                                            ("cubic", "align_corners")])
def test_resize(rng, mode, transform):
    x = randn(rng, 1, 3, 7, 5)
    inits = {"roi": np.zeros(0, np.float32), "scales": np.array([1, 1, 2.0, 1.6], np.float32)}
    model = single_op("Resize", {"x": x}, initializers=inits, mode=mode, coordinate_transformation_mode=transform)
    run_both(model, {"x": x})


@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_mean(rng, keepdims):
    x = randn(rng, 3, 7, 13)
    run_both(single_op("ReduceMean", {"x": x}, axes=[0, 2], keepdims=keepdims), {"x": x})


def test_layer_normalization(rng):
    x = randn(rng, 2, 7, 13)
    inits = {"scale": randn(rng, 13), "bias": randn(rng, 13)}
    run_both(single_op("LayerNormalization", {"x": x}, initializers=inits, axis=-1, epsilon=1e-5), {"x": x})


def test_max_pool(rng):
    x = randn(rng, 1, 3, 13, 11)
    run_both(single_op("MaxPool", {"x": x}, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), {"x": x})


def test_global_average_pool(rng):
    x = randn(rng, 2, 5, 7, 3)
    run_both(single_op("GlobalAveragePool", {"x": x}), {"x": x})


def test_gather(rng):
    x = randn(rng, 7, 5)
    idx = np.array([[0, 6], [-1, 3]], np.int64)
    run_both(single_op("Gather", {"x": x, "i": idx}, axis=0), {"x": x, "i": idx})


def test_slice(rng):
    x = randn(rng, 7, 13)
    inits = {"starts": np.array([1, -2], np.int64), "ends": np.array([6, 0], np.int64),
             "axes": np.array([0, 1], np.int64), "steps": np.array([2, -3], np.int64)}
    run_both(single_op("Slice", {"x": x}, initializers=inits), {"x": x})


def test_greater_gives_bool(rng):
    a, b = randn(rng, 3, 5), randn(rng, 5)
    run_both(single_op("Greater", {"a": a, "b": b}), {"a": a, "b": b})


def test_where_bool_input(rng):
    feed = {"c": rng.random((3, 5)) > 0.5, "a": randn(rng, 3, 5), "b": randn(rng, 1, 5)}
    run_both(single_op("Where", feed), feed)


@pytest.mark.parametrize("op", ["Relu", "Sigmoid", "Tanh", "Exp", "Sqrt"])
def test_unary(rng, op):
    x = np.abs(randn(rng, 3, 127)) if op == "Sqrt" else randn(rng, 3, 127)
    run_both(single_op(op, {"x": x}), {"x": x})


def test_cast_to_float16(rng):
    x = randn(rng, 4, 13)
    run_both(single_op("Cast", {"x": x}, to=10), {"x": x})


@pytest.mark.parametrize("max_boxes", [np.iinfo(np.int64).max, 2 ** 53 + 1, 3])
def test_non_max_suppression_box_count_stays_an_integer(rng, max_boxes):
    # torchvision's detectors export INT64_MAX as the box count: every box ONNX Runtime keeps
    # must be kept, not none (the count once went through a double and became 0).
    corners = rng.uniform(0, 100, size=(1, 40, 2)).astype(np.float32)
    boxes = np.concatenate([corners, corners + rng.uniform(5, 30, size=(1, 40, 2)).astype(np.float32)], axis=2)
    scores = rng.uniform(0, 1, size=(1, 3, 40)).astype(np.float32)
    model = single_op("NonMaxSuppression", {"boxes": boxes, "scores": scores},
                      initializers={"max_boxes": np.array([max_boxes], np.int64), "iou": np.array([0.4], np.float32),
                                    "score": np.array([0.2], np.float32)})
    run_both(model, {"boxes": boxes, "scores": scores})


def test_batchnorm_in_training_mode_uses_the_batch_statistics(rng, tmp_path):
    """Conv -> BatchNormalization(training_mode=1): normalised by the batch's own mean and
    variance, so the converter must not fold the given statistics into the Conv; and the
    weight standardisation of timm's NF-Nets (BatchNorm over a reshaped constant weight)."""
    from onnx import TensorProto, helper, numpy_helper
    import osprey
    from conftest import IR_VERSION, OPSET, assert_close, make_model, ort
    x = randn(rng, 2, 3, 8, 8)
    inits = [numpy_helper.from_array(randn(rng, 4, 3, 3, 3), "w"),
             numpy_helper.from_array(np.array([1, 4, -1], np.int64), "flat"),
             numpy_helper.from_array(np.array([4, 3, 3, 3], np.int64), "wshape")]
    for name, value in (("scale", rng.uniform(0.5, 2, 4)), ("bias", randn(rng, 4)), ("mean", randn(rng, 4)),
                        ("var", rng.uniform(0.5, 2, 4)), ("ones", np.ones(4)), ("zeros", np.zeros(4))):
        inits.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["y", "run_mean", "run_var"],
                              training_mode=1, momentum=0.8),
             helper.make_node("Reshape", ["w", "flat"], ["w_rows"]),
             helper.make_node("BatchNormalization", ["w_rows", "ones", "zeros", "zeros", "ones"],
                              ["w_std_rows", "unused_mean", "unused_var"],
                              training_mode=1, momentum=0.0, epsilon=1e-4),
             helper.make_node("Reshape", ["w_std_rows", "wshape"], ["w_std"]),
             helper.make_node("Conv", ["x", "w_std"], ["z"], pads=[1, 1, 1, 1])]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "z", "run_mean", "run_var")]
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])], outputs, inits)
    run_both(model, {"x": x}, tmp_path)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(["y"], {"x": x})[0]
    # As exporters write it (torch's F.batch_norm with training=True): Y alone, which ONNX's
    # shape inference refuses (ONNX Runtime too); its Conv must stay unfolded.
    single = helper.make_graph(nodes[:1] + [helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"],
                                                             ["y"], training_mode=1)], "single",
                               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])],
                               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 8, 8])], inits[:1] + inits[3:7])
    model = helper.make_model(single, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    got = osprey.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    assert_close(got, want, "y of the one-output BatchNormalization")


def test_batchnorm_folded_into_convolutions_sharing_weights(rng, tmp_path):
    """Two Conv + BatchNormalization pairs reading one weight: the converter folds each pair
    into its own weights, whose made-up names must not collide (sessions find tensors by name)."""
    from onnx import TensorProto, helper, numpy_helper
    from conftest import make_model
    x = randn(rng, 1, 3, 8, 8)
    inits = [numpy_helper.from_array(randn(rng, 4, 3, 3, 3), "w")]
    nodes = []
    for k in (1, 2):
        for name, value in (("scale", rng.uniform(0.5, 2, 4)), ("bias", randn(rng, 4)), ("mean", randn(rng, 4)),
                            ("var", rng.uniform(0.5, 2, 4))):
            inits.append(numpy_helper.from_array(np.asarray(value, np.float32), "%s%d" % (name, k)))
        nodes += [helper.make_node("Conv", ["x", "w"], ["c%d" % k], pads=[1, 1, 1, 1]),
                  helper.make_node("BatchNormalization", ["c%d" % k, "scale%d" % k, "bias%d" % k, "mean%d" % k,
                                                          "var%d" % k], ["y%d" % k])]
    outputs = [helper.make_tensor_value_info("y%d" % k, TensorProto.FLOAT, None) for k in (1, 2)]
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])], outputs, inits)
    run_both(model, {"x": x}, tmp_path)
