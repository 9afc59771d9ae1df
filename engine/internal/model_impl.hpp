// Model::Impl (model.hpp): a loaded model's state and the builder that fills it, one class over
// three sources: model.cpp builds the step list in node order, lays out the memory and runs it;
// model_kernels.cpp adds the tuned-kernel steps (convs and matmuls with their fused epilogues)
// and the convs and Gemms no kernel takes; model_plain.cpp adds every other operator's step.
// Private to engine/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/json.hpp"
#include "engine/conv_ops.hpp"
#include "engine/model.hpp"
#include "engine/onnx_file.hpp"
#include "engine/volume_ops.hpp"
#include "frontend/graph.hpp"
#include "frontend/graph_patterns.hpp"
#include "runtime/runtime.hpp"

namespace atvoss::engine {

// Arena slots a step reads and writes in NHWC order; -1: the node's own tensors.
struct NhwcSlots {
  int in = -1, out = -1;
};

// Where a kernel's A and C start in their slots, in floats.
struct SlotOffsets {
  std::int64_t a = 0, c = 0;
};

// Whether an element type is one of ONNX's integer types (int8 to int64, uint8 to uint64),
// which the engine holds as exact floats (an integer Div truncates; inputs are checked).
bool is_integer_type(const std::string& type);

// A tensor's data when a step runs: a buffer of the arena, or a constant of the file.
struct Ref {
  int slot = -1;
  const float* constant = nullptr;
};

struct Value {
  Shape shape;
  int plain = -1, nhwc = -1;  // slots holding it in ONNX order, in NHWC order
  bool nhwc_first = false;    // its producer writes NHWC (a conv kernel)
  bool in_concat = false;     // its producer wrote it into its concat's output (concat_place)
  const float* constant = nullptr;
};

struct Slot {
  std::int64_t bytes = 0;
  int first = std::numeric_limits<int>::max(), last = -1;  // steps that write it first and read it last
};

struct Step {
  std::string node, kind;
  Json info = Json::object();
  std::function<void()> run;
};

struct Model::Impl {
  ModelOptions options;
  std::unique_ptr<OnnxFile> file;
  frontend::Graph graph;
  std::unique_ptr<runtime::Runtime> rt;
  std::vector<Value> values;  // by graph tensor index
  std::vector<Slot> slots;
  std::vector<Step> steps;
  std::vector<float*> ptr;  // per slot, into the arena
  std::unique_ptr<float[]> arena_storage;
  std::int64_t arena_bytes = 0;
  std::vector<int> input_tensors, output_tensors;  // an input's tensor; -1: one no node reads
  std::vector<TensorInfo> inputs, outputs;
  std::vector<std::unique_ptr<std::vector<float>>> owned;              // folded weights, biases
  std::vector<std::unique_ptr<std::vector<std::int32_t>>> owned_sums;  // int8 kernels' compensations
  std::vector<runtime::PreparedWeights> packed;
  // The nodes of an op exporters write out as primitives below the opset that has it, run as
  // the one op (ONNX Runtime fuses the same): the tensor x, the op's output, its nodes, and
  // which op:
  //   erf_gelu   x * 0.5 * (1 + erf(x / sqrt 2)) (torch's nn.GELU, Hugging Face's gelu);
  //   tanh_gelu  the same with tanh(sqrt(2 / pi) (x + 0.044715 x^3)) for the erf (GPT-2's
  //              gelu_new, torch's approximate="tanh");
  //   layer_norm (x - mean) / sqrt(mean((x - mean)^2) + epsilon) over x's last axis, then times
  //              gamma and plus beta where they follow (BERT's and GPT-2's LayerNorm below
  //              opset 17);
  //   rms_norm   x / sqrt(mean(x^2) + epsilon) over x's last axis (a Reciprocal and a Mul, or a
  //              Div), then times gamma where it follows (T5's and LLaMA's RMSNorm below
  //              opset 23).
  struct Pattern {
    enum class Kind { erf_gelu, tanh_gelu, layer_norm, rms_norm } kind = Kind::erf_gelu;
    int x = -1, out = -1;
    std::vector<int> nodes;
    float epsilon = 0;  // layer_norm's
    const float* gamma = nullptr;
    const float* beta = nullptr;
  };

  std::set<int> absorbed;                   // nodes an earlier step computes (sole_relu_reader)
  std::vector<Pattern> patterns;            // find_patterns
  std::map<int, std::size_t> pattern_of;    // a node of one: its index there
  std::map<std::string, Schedule> planned;  // workload key -> the plan's schedule
  int kernels = 0, kernels_from_plan = 0;
  int threads = 1;  // the cores the kernels and the larger plain ops run on

  // --- building ---------------------------------------------------------------------------

  int new_slot(const Shape& s) {
    slots.push_back({elements(s) * std::int64_t(sizeof(float))});
    return int(slots.size()) - 1;
  }
  void reads(int slot) {
    if (slot >= 0) slots[slot].last = std::max(slots[slot].last, int(steps.size()));
  }
  void writes(int slot) {
    if (slot >= 0) slots[slot].first = std::min(slots[slot].first, int(steps.size()));
  }
  const float* at(const Ref& r) const { return r.constant ? r.constant : ptr[r.slot]; }
  // v kept for the model's life; never null, even for no values (a null constant is none).
  const float* owned_data(std::vector<float> v) {
    if (v.empty()) v.push_back(0.0f);
    owned.push_back(std::make_unique<std::vector<float>>(std::move(v)));
    return owned.back()->data();
  }

  int tensor(const std::string& name) const { return graph.tensor_index(name); }

  // Tensor t in ONNX order (a layout step first if only NHWC holds it); read by the next step.
  Ref plain(int t, const std::string& who);

  // Tensor t in NHWC order where in_nhwc, else in ONNX order.
  Ref in_order(int t, bool in_nhwc, const std::string& who) {
    return in_nhwc ? Ref{nhwc(t, who), nullptr} : plain(t, who);
  }

  // Tensor t in NHWC order (a layout step first if only ONNX order holds it).
  int nhwc(int t, const std::string& who);

  void add_to_nchw_step(int t);

  // The output slot of tensor t, in ONNX order or NHWC.
  int output(int t, bool in_nhwc);

  void build();

  bool available(int t) const {
    const Value& v = values[t];
    return v.constant || v.plain >= 0 || v.nhwc >= 0 || v.in_concat || graph.tensors()[t].constant;
  }

  // Whether node i and the nodes fused into it have every input they read from outside.
  bool ready(int i) const;

  // Nodes in an order where each runs after its inputs: the file's, except that a kernel waits
  // for the residual its fused Add reads, which the file may list after it.
  void add_nodes();

  // The graph's inputs, in its order (ONNX Runtime's): those a step reads, and those no step
  // reads (an argument the traced code ignored, or one only shape computations read, folded
  // at load), which are fed and left unread, as ONNX Runtime takes them.
  void add_inputs();
  // A graph input no node reads, listed (its tensor -1 in input_tensors) when its type and
  // shape are ones the engine takes; skipped otherwise.
  void add_unread_input(const onnx::ValueInfoProto& v);

  void add_outputs();

  void add_node(int i);

  bool constant_outputs(const frontend::GraphNode& n) const;

  // Whether n's outputs are missing from the file while all its inputs are known constants.
  bool computable_now(const frontend::GraphNode& n) const;
  // Shape (opset 15's start and end) and Size of a tensor whose shape is known at load: a
  // constant, whatever the importer made of the node (a graph output, or what a step reads).
  void fold_shape_of(const frontend::GraphNode& n, const onnx::NodeProto& p);

  // A node of constants only whose values the file does not hold (a Slice of a position-id
  // buffer, arithmetic on weights): built as its step would be, run once now over buffers of
  // its own, and its outputs kept as constants; the step leaves the model.
  void fold_constant_node(const frontend::GraphNode& n, const onnx::NodeProto& p);

  void add_view(const frontend::GraphNode& n);

  // Casts between the types the engine holds as floats (float, double, int64, int32, bool; uint8 from constants):
  // one that keeps the values (to float; integer or bool to integer; bool to bool) is a view;
  // float to an integer truncates toward zero and anything to bool tests against zero, as ONNX
  // Runtime does. Other types are refused naming both.
  void add_cast(const frontend::GraphNode& n, const onnx::NodeProto& p);

  // --- kernel steps -----------------------------------------------------------------------

  struct Chain {
    std::vector<std::string> epilogue;
    int out = -1;              // the tensor the kernel writes: the last fused node's output
    int residual = -1;         // the tensor "add" reads
    std::vector<int> rest;     // fused nodes run as plain steps after the kernel
    std::vector<float> slope;  // "leaky_relu": each channel's negative slope
    std::vector<float> qout;   // "requantize": the grid's scale and zero point (u8)
    std::vector<int> taken;    // nodes past the fused ones it computes (a requantize's pair)
    std::vector<int> aliases;  // tensors that are its output (a requantize's other readers')
  };
  // The fused nodes a kernel step did not compute, as plain steps after it, and (absorb_epilogue)
  // those of node i it computed in chain ch, each marked as run (a plan's graph may hold them
  // fused into a node it left without a kernel: add_node must not run them again).
  void run_after(const std::vector<int>& rest);
  void absorb_epilogue(int i, const Chain& ch);
  // A kernel's per-channel operands, kept for the model's life (null where its epilogue has
  // no such op).
  struct ChannelData {
    const float* bias = nullptr;
    const float* slope = nullptr;
    const float* qout = nullptr;  // a {scale, zero point} per requantize, in order
    int grids = 0;
  };
  // Chain c's per-channel operands (bias: the one chain_of grew) moved into the model.
  ChannelData channel_data(Chain& c, std::vector<float>& bias);

  // The fused nodes of kernel node i, in chain order.
  std::vector<int> fused_nodes(int i) const;

  static bool has(const std::vector<std::string>& v, const char* e) {
    return std::find(v.begin(), v.end(), e) != v.end();
  }

  // The constant c as one value per output channel (k of them), or nullopt.
  std::optional<std::vector<float>> per_channel(const std::string& tensor, std::int64_t k) const;
  // Constant tensor t as one value per channel of an output shaped `out` whose channels lie
  // on axis `axis`, under ONNX broadcasting (a scalar, or k on that axis and 1 elsewhere), or
  // nullopt.
  std::optional<std::vector<float>> broadcast_channels(int t, const Shape& out, std::size_t axis) const;

  static int other_input(const frontend::GraphNode& n, int t) {
    if (n.inputs.size() != 2) return -1;
    return n.inputs[0] == t ? n.inputs[1] : n.inputs[0];
  }

  // Grows the epilogue of a kernel writing tensor `out` with k output channels (or columns)
  // through its fused nodes while the host kernel computes each exactly; folds BN and
  // constant scales into weights (fold: scale per channel of weights and bias) when allowed.
  Chain chain_of(int i, std::int64_t k, std::vector<float>& bias, bool has_bias, bool conv,
                 const std::function<void(const std::vector<float>&)>& scale_weights);

  // The GELU whose nodes are fused[f], fused[f + 1], ... (in any order), reading the chain's
  // output: its epilogue op taken into c, f moved to its last node; false (nothing changed)
  // for another.
  bool take_gelu(const std::vector<int>& fused, std::size_t& f, Chain& c) const;

  bool fold(const frontend::GraphNode& n, const onnx::NodeProto& p, Chain& c, std::int64_t k, std::vector<float>& bias,
            const std::function<void(const std::vector<float>&)>& scale_weights);

  bool add_step(const frontend::GraphNode& n, const onnx::NodeProto& p, Chain& c, std::int64_t k,
                std::vector<float>& bias, bool conv);
  // A LeakyRelu's alpha, or a PRelu's constant slope, as each channel's negative slope.
  bool add_slope(const frontend::GraphNode& n, const onnx::NodeProto& p, Chain& c, std::int64_t k, bool conv);

  Workload kernel_workload(const Workload& w, const std::vector<std::string>& epilogue,
                           DType dtype = DType::float32) const;

  // --- int8 (a QDQ model's convs; docs/decisions/engine-int8-convs.md) ----------------------

  // A u8 quantization grid: values (q - zero) * scale for q in [0, 255].
  struct Grid {
    float scale = 1;
    int zero = 0;
  };
  // The grid of a DequantizeLinear's or QuantizeLinear's one constant scale and zero point
  // (node n) for codes of type `type` (int8 codes c are the u8 codes c + 128), or nullopt.
  std::optional<Grid> grid_of_node(const frontend::GraphNode& n, const std::string& type) const;
  // The same node's one constant scale, its zero point left as the shift of codes of `type`
  // into u8 (0 or 128): what a zero point computed at run time is added to.
  std::optional<Grid> grid_scale(const frontend::GraphNode& n, const std::string& type) const;
  // A chain whose output only a QuantizeLinear of one constant scale and zero point reads, read
  // in turn only by the DequantizeLinear that undoes it (a QDQ model's activation): the pair
  // taken in as the kernel's last epilogue op, "requantize" onto that grid (c.taken, for the
  // caller to mark as run once its kernel step is certain); false (nothing changed) otherwise.
  bool take_requantize(Chain& c);
  // After take_requantize: the Add that alone reads the chain's output, of a residual of its
  // shape a step has made already, and its sum (through a Relu that alone reads it) read only by
  // a QuantizeLinear and the DequantizeLinears that undo it, taken in as "add" (c.residual),
  // "relu" and a second "requantize" onto the sum's grid: a QDQ model's residual block, whose Add
  // and QuantizeLinear each ran as a plain step over fp32 values. False: nothing changed.
  bool take_residual_requantize(Chain& c);
  // A conv's filter (OIHW, k outputs of cin channels, taps taps) as int8 codes: its producer a
  // DequantizeLinear of int8 or uint8 constants per tensor or per output channel whose codes
  // less their zero point fit in int8. HWIO codes and each output channel's scale, or nullopt.
  struct Int8Filter {
    std::vector<std::int8_t> codes;  // [rows][columns]: a filter's HWIO, a matrix's [K][N]
    std::vector<float> scale;
  };
  std::optional<Int8Filter> int8_filter(int w, std::int64_t k, std::int64_t cin, std::int64_t taps) const;
  // The grid tensor t (a conv's input, a matmul's A) lies on, as an int8 kernel reads its u8
  // codes: its producer a DequantizeLinear of one constant scale and one zero point, a constant
  // or computed at run time (DynamicQuantizeLinear's, read when the step runs).
  struct RunGrid {
    float scale = 1;
    Ref zero;       // its one value
    int shift = 0;  // 128 for int8 codes
  };
  std::optional<RunGrid> run_grid_of(int t, const std::string& who);
  // The int8 kernel of rows x c codes times c x k weights with epilogue (a MatMulInteger's
  // product, or a 1x1 conv of stride 1 and no padding over its pixels): the int8 matmul where
  // this CPU runs it on AMX tiles (its weights packed once at load) and rows and c fill a tile
  // (16 rows of 64), else the 1x1 conv2d of a 1 x rows image (the same rows in and out;
  // docs/decisions/engine-int8-amx.md).
  Workload pointwise_int8(std::int64_t rows, std::int64_t c, std::int64_t k,
                          const std::vector<std::string>& epilogue) const;
  // A matmul's constant B ([K, N], row-major) as int8 codes and each column's scale: integers in
  // int8's range (MatMulInteger's weights less their zero point, scale 1), or nullopt.
  std::optional<Int8Filter> int8_matrix(int b, std::int64_t k, std::int64_t n) const;
  // An int8 kernel's requantized output (tensor `tensor` and its aliases) as the u8 codes its
  // int8 readers take as their input: written to `slot` (the ABI's qc) instead of the values
  // when every reader of the tensor is such a kernel on the same grid (settle_codes decides,
  // once every step is built); else the values, and each reader makes its codes again.
  struct CodesOut {
    std::vector<int> tensors;  // the requantized output and its aliases
    int slot = -1;
    int values = -1;  // the slot of the values, which a reader must read to take the codes
    float scale = 1;
    int zero = 0;                    // the codes' zero point (an int8 grid's shifted by 128)
    std::vector<std::size_t> steps;  // the producer's step, then its int8 readers'
    std::vector<int> reader_codes;   // the readers' own codes slots, unused once written
    bool written = false;            // settled: the producer writes the codes, the readers read them
    bool with_values = false;        // settled: and the values, which other readers read
  };
  std::vector<std::shared_ptr<CodesOut>> codes_out;
  std::map<int, std::shared_ptr<CodesOut>> codes_of;  // tensor -> its producer's codes
  void settle_codes();
  // A kernel step about to be built whose epilogue requantizes (channels.qout) offers the codes
  // of its output (tensors, values in values_slot); null where it does not requantize.
  std::shared_ptr<CodesOut> offer_codes(const ChannelData& channels, const std::vector<int>& tensors, int values_slot);
  static std::vector<int> outputs_of(const Chain& c);  // a chain's output tensor and its aliases
  // An int8 kernel's compensation for A's zero point: column[n + j] = zero * column[j], the
  // column sums of its weights' codes in column[0, n).
  static void compensate(std::int32_t* column, std::int64_t n, int zero);

  // What an int8 step reads: tensor `tensor`'s values in `values`, `count` codes of them; with
  // stride > 1 the values are an NHWC image of shape `image` (a 1x1 conv's input with no
  // padding) and the codes are those of every stride-th pixel.
  struct Int8Input {
    int tensor = -1;
    Ref values;
    std::int64_t count = 0;
    Shape image{};
    std::int64_t stride = 1;
  };
  // Step `step` as int8 kernel w (a conv2d, or a matmul's pointwise_int8): A's values (on grid
  // g; a conv's NHWC input) as u8 codes, or its producer's codes (offer_codes), B's codes (a
  // matrix, a filter's HWIO) packed once, the compensation for A's zero point (padding holds its
  // code, so every tap is compensated) computed when the step runs, the s32 sums scaled by g's
  // and each column's scale into the fp32 epilogue; its output (tensors out_tensors, slot out)
  // offered as codes where it requantizes.
  void add_int8_kernel(Step step, const Workload& w, const RunGrid& g, const Int8Filter& f, const ChannelData& channels,
                       const Int8Input& in, int res, int out, const std::vector<int>& out_tensors);

  // Compiles w's kernel now (or takes it from the compile cache) and counts where its schedule
  // comes from.
  void prepare_kernel(const Workload& w, Json& info);

  bool add_kernel(int i, const onnx::NodeProto& p);

  bool add_conv(int i, const onnx::NodeProto& p);
  // Where a kernel writes tensor t in place, as the channels [offset, offset + its channels) of
  // the NHWC output of the Concat along channels that alone reads it, ld floats a pixel (the
  // ABI's c_ld; the concat then copies only its other inputs, or adds no step): that output's
  // slot, made now where it has none. nullopt where t has another reader or is a graph output,
  // or the concat is not along the channels of 4-D tensors.
  struct Placement {
    int slot = -1;
    std::int64_t offset = 0, ld = 0;
  };
  std::optional<Placement> concat_place(int t);
  // Kernel w on A a, B b (its prepared copy packed[packed_at], or -1 for none), per-channel
  // operands and residual (or null), into c: the call every kernel step makes.
  // qc set: a requantizing kernel writes its output's u8 codes there (c its scratch, or the
  // values too where qc_with_c); c_ld: C's row stride (an fp32 conv's, concat_place), 0 dense.
  void run_kernel(const Workload& w, const float* a, const float* b, const ChannelData& channels, const float* residual,
                  float* c, long packed_at, std::uint8_t* qc = nullptr, bool qc_with_c = false, std::int64_t c_ld = 0);
  // Conv step `step` of a dilated conv (dilation d) as the importer's conv w over its phase
  // images (frontend/phase_conv.hpp): tensor x's NHWC slot `in` (and the residual's `res`, or
  // -1) gathered into the phase images (to_phases), the kernel run once over them, the result
  // put back into the NHWC slot `out` (from_phases).
  void add_phase_conv(Step step, const Workload& w, const float* filter, const ChannelData& channels, int x, int in,
                      int res, int out, std::int64_t d, std::size_t packed_at);

  // A ConvTranspose of one group with constant weights, as the importer's task says: its
  // matmul ([N x H x W, C] NHWC input x the weights as [C, kh x kw x K]) into a buffer of
  // windows, then their scatter-add with the bias into the NHWC output (col2im_nhwc). The
  // plain NCHW loop it replaces took 373 ms of a U-Net's 448.
  bool add_conv_transpose_kernel(int i, const onnx::NodeProto& p);

  // A kernel step of matmul w: A in slot a, the constant B (packed once, where w's kernel packs
  // it), the per-channel operands, C into slot c; A and C `at` floats into their slots.
  void push_matmul_kernel(const std::string& name, const Workload& w, int a, const float* b,
                          const ChannelData& channels, int c, SlotOffsets at = {});

  // A constant B packed once by w's kernel, as the conv filters are: the index of its packing,
  // or -1 where the kernel reads B in place (nothing to pack; the copy prepare_weights makes
  // for that case is dropped, B itself stays constant).
  long prepare_constant_b(const Workload& w, const float* b);

  bool add_matmul(int i, const onnx::NodeProto& p);

  // --- plain steps ------------------------------------------------------------------------

  [[noreturn]] void unsupported(const frontend::GraphNode& n, const std::string& why) const {
    throw_bad_input("model: node '" + n.name + "' (" + n.op + "): " + why);
  }

  std::int64_t axis_of(const frontend::GraphNode& n, std::int64_t axis, std::size_t rank) const {
    const std::int64_t a = axis < 0 ? axis + std::int64_t(rank) : axis;
    if (a < 0 || a >= std::int64_t(rank)) unsupported(n, "axis " + std::to_string(axis) + " out of range");
    return a;
  }

  void push(const frontend::GraphNode& n, std::function<void()> run, Json info = Json::object()) {
    info["op"] = n.op;
    steps.push_back({n.name, "plain", std::move(info), std::move(run)});
  }

  float scalar_input(const onnx::NodeProto& p, int index, float fallback) const;

  void add_plain(const frontend::GraphNode& n, const onnx::NodeProto& p);
  // Whether n is arithmetic whose narrow integer result (int8, uint8, ...) would wrap around in
  // ONNX, which the engine's floats do not: refused rather than computed otherwise.
  bool wraps_around(const frontend::GraphNode& n) const;

  void add_unary(const frontend::GraphNode& n, const onnx::NodeProto& p);

  // Elementwise ops run in whichever order holds their input: a conv's NHWC output stays NHWC
  // through a Clip (ReLU6), an activation or a residual Add, with no layout step either side
  // (MobileNetV2 spent 40 % of its run transposing around its ReLU6s).
  bool held_nhwc(int t) const { return values[t].nhwc_first && values[t].shape.size() == 4; }

  void add_unary_op(const frontend::GraphNode& n, const std::string& op, float alpha, float beta) {
    add_unary_op(n, n.inputs[0], n.outputs[0], op, alpha, beta);
  }
  void add_unary_op(const frontend::GraphNode& n, int xt, int yt, const std::string& op, float alpha, float beta);

  // --- ops exporters write out as primitives (frontend/graph_patterns.hpp) -----------------

  // The graph's patterns, its constants read from the file.
  frontend::PatternView view() const;

  // Whether node r is a ReduceMean of tensor x over its last axis alone (its output x's shape
  // with the last dim 1: reducing axes of one element changes nothing).
  bool last_axis_mean(int r, int x) const;
  // The decomposed LayerNorm whose first ReduceMean is r: x - mean (Sub), its square (Pow 2 or
  // the Mul of it by itself) averaged the same way, plus a constant epsilon (Add), Sqrt, the
  // difference divided by it (Div), then a Mul by a constant of x's last dim and an Add of one
  // where they follow. Each inner tensor has its readers in the pattern alone.
  std::optional<Pattern> layer_norm_at(const frontend::PatternView& v, int r) const;
  // The decomposed RMSNorm whose square (Pow 2, or the Mul of x by itself) is node q: averaged
  // over x's last axis (ReduceMean), plus a constant epsilon, Sqrt, then x times its Reciprocal
  // or x divided by it, then a Mul by a constant of x's last dim where it follows.
  std::optional<Pattern> rms_norm_at(const frontend::PatternView& v, int q) const;
  // The Sqrt of the mean square node var computes plus a constant epsilon (Add, then Sqrt), its
  // nodes added to nodes and the constant to eps; else -1, nothing changed.
  int root_plus_epsilon(const frontend::PatternView& v, int var, float& eps, std::vector<int>& nodes) const;
  // p grown through a Mul by a constant gamma of its input's last dim, then (beta: where it may
  // have one) an Add of a constant beta, where they follow.
  Pattern with_affine(const frontend::PatternView& v, Pattern p, bool beta) const;
  // The constant of len values (a [len] or [1, ..., len] tensor; a scalar where len is 1) node i
  // multiplies by or adds (op, either way round) to tensor t, else null.
  const float* row_constant(int i, const std::string& op, int t, std::int64_t len) const;

  // Every such pattern of the graph, by its nodes (found before any step is added).
  void find_patterns();

  // At the first of a pattern's nodes the steps reach: one step for all of them (a GELU's five
  // to nine passes over the tensor, a LayerNorm's nine, where there was one), and the others
  // absorbed.
  bool add_pattern(int i);

  // The shape input t reads as in NHWC order for an NHWC output of shape so, or nullopt when it
  // cannot be read so: a tensor held in NHWC of the output's shape, one whose H and W are 1 (the
  // same bytes in either order: a squeeze-excitation's scale), or a scalar.
  std::optional<Shape> nhwc_operand(int t, const Shape& so) const;

  bool is_integer(int t) const { return is_integer_type(graph.tensors()[t].dtype); }
  // Whether t's shape is known: a scalar's is known and empty (the importer gives it the bytes
  // of one element; an unknown shape has none).
  bool shape_known(int t) const { return !values[t].shape.empty() || graph.tensors()[t].bytes > 0; }

  void add_where(const frontend::GraphNode& n);

  // Expand(x, shape): x broadcast to the output's shape (known once the shape is folded).
  void add_expand(const frontend::GraphNode& n);

  void add_binary(const frontend::GraphNode& n, const std::string& op);
  // Sum, Mean, Max or Min of one input or more than two (two of Max, Min or Sum: add_binary).
  void add_variadic(const frontend::GraphNode& n);
  // Trilu (a causal mask's triangle) with a constant k.
  void add_trilu(const frontend::GraphNode& n, const onnx::NodeProto& p);
  // GatherElements (torch.gather) with indices read in every run and checked.
  void add_gather_elements(const frontend::GraphNode& n, const onnx::NodeProto& p);
  // Refuses indices (GatherElements', ScatterElements') longer than data along a dim but axis:
  // every index there is read as the position in data.
  void require_within(const frontend::GraphNode& n, const Shape& is, const Shape& xs, std::size_t axis) const;
  // GatherND with indices read in every run and checked; batch_dims as the attribute says.
  void add_gather_nd(const frontend::GraphNode& n, const onnx::NodeProto& p);
  // Einsum of one or two operands (engine/einsum.hpp), refused naming the node where planning it fails.
  void add_einsum(const frontend::GraphNode& n, const onnx::NodeProto& p);
  // RNN, GRU and LSTM (engine/rnn.hpp) with constant weights; sequence_lens and the initial
  // states as the graph gives them (constants or tensors); each output the graph names.
  void add_rnn(const frontend::GraphNode& n, const onnx::NodeProto& p);
  // TopK with a constant k: values and their indices (as floats).
  void add_top_k(const frontend::GraphNode& n, const onnx::NodeProto& p);
  // GridSample of 4-D inputs, every mode, padding mode and align_corners (plain_ops.hpp).
  void add_grid_sample(const frontend::GraphNode& n, const onnx::NodeProto& p);
  // LpNormalization, Hardmax (opset 13's axis; before it, the dims from axis on as one) and
  // MeanVarianceNormalization (axes, [0, 2, 3] by default).
  void add_axis_normalization(const frontend::GraphNode& n, const onnx::NodeProto& p);
  // EyeLike of a 2-D input (k; the ones and zeros in whatever dtype it names).
  void add_eye_like(const frontend::GraphNode& n, const onnx::NodeProto& p);
  // OneHot with a constant depth and [off, on] values.
  void add_one_hot(const frontend::GraphNode& n, const onnx::NodeProto& p);
  // ScatterND, ScatterElements (and opset 9's Scatter, the same) with every reduction; indices
  // read and checked in every run.
  void add_scatter(const frontend::GraphNode& n, const onnx::NodeProto& p);
  // GroupNormalization (opset 18's per-group affine and opset 21's per-channel one).
  void add_group_norm(const frontend::GraphNode& n, const onnx::NodeProto& p);
  // RMSNormalization (opset 23) over the dims from axis on.
  void add_rms_norm(const frontend::GraphNode& n, const onnx::NodeProto& p);
  // CumSum along a constant axis, exclusive and reverse as the attributes say.
  void add_cumsum(const frontend::GraphNode& n, const onnx::NodeProto& p);

  void add_pool(const frontend::GraphNode& n, const onnx::NodeProto& p);

  void add_global_pool(const frontend::GraphNode& n);

  void add_concat(const frontend::GraphNode& n, const onnx::NodeProto& p);

  void add_transpose(const frontend::GraphNode& n, const onnx::NodeProto& p);

  void add_softmax(const frontend::GraphNode& n, const onnx::NodeProto& p);

  const float* constant_of(const frontend::GraphNode& n, const onnx::NodeProto& p, int index, std::int64_t count);

  void add_layer_norm(const frontend::GraphNode& n, const onnx::NodeProto& p);

  void add_batch_norm(const frontend::GraphNode& n, const onnx::NodeProto& p);
  void add_image_scaler(const frontend::GraphNode& n, const onnx::NodeProto& p);

  // The Relu node that is tensor t's one reader (t not a graph output), or -1.
  int sole_relu_reader(int t) const {
    const int c = sole_reader(t, "Relu");
    return c >= 0 && graph.nodes()[c].inputs.size() == 1 ? c : -1;
  }

  // The node of type op, of one output, that is tensor t's one reader (t not a graph output),
  // or -1.
  int sole_reader(int t, const std::string& op) const;

  // ShuffleNet's channel shuffle as exporters write it, Reshape to [N, g, C / g, H, W], Transpose
  // by [0, 2, 1, 3, 4] and Reshape back to [N, C, H, W], of a tensor held in NHWC: one step that
  // transposes each pixel's channels as [g, C / g] in NHWC, for the three nodes (in ONNX order
  // each took a layout change before and after it).
  bool add_channel_shuffle(const frontend::GraphNode& n);

  void add_lrn(const frontend::GraphNode& n, const onnx::NodeProto& p);

  void add_gather(const frontend::GraphNode& n, const onnx::NodeProto& p);

  // An int64 list from constant input `index`, else attribute `attr`; nullopt where neither.
  std::optional<std::vector<std::int64_t>> ints_of(const frontend::GraphNode& n, const onnx::NodeProto& p, int index,
                                                   const std::string& attr) const;

  void add_slice(const frontend::GraphNode& n, const onnx::NodeProto& p);

  // Output y of x from `from` at `step` along each dim (ONNX order), in whichever order holds
  // x: a conv's NHWC output is sliced in NHWC (ShuffleNet splits its channels between convs),
  // each pixel's channels one run of a copy.
  void add_strided_slice(const frontend::GraphNode& n, int xt, int yt, std::vector<std::int64_t> from,
                         std::vector<std::int64_t> step);

  void add_split(const frontend::GraphNode& n, const onnx::NodeProto& p);

  void add_pad(const frontend::GraphNode& n, const onnx::NodeProto& p);

  void add_reduce(const frontend::GraphNode& n, const onnx::NodeProto& p);

  // A Conv's or ConvTranspose's groups, strides, dilations and explicit top and left pads.
  static ConvAttrs conv_attrs(const onnx::NodeProto& p);
  // Whether a conv (shapes of its 2-D view) runs as im2col and matmuls: constant weights and
  // groups that divide its channels.
  bool conv_as_matmuls_fits(const onnx::NodeProto& p, const Shape& xs, const Shape& ws, const ConvAttrs& a) const;
  // A 1-D conv given as its [N, C, 1, L] view, the matmul route between two layout steps; false
  // (nothing added) where conv_as_matmuls_fits says no.
  bool add_conv1d_as_matmuls(const frontend::GraphNode& n, const onnx::NodeProto& p, const Shape& xs, const Shape& ws,
                             const Shape& ys, const ConvAttrs& a);

  void add_plain_conv(const frontend::GraphNode& n, const onnx::NodeProto& p);

  // A conv no tuned conv kernel takes (groups, uneven pads or strides, dilations, a 1 x 7
  // kernel's pads) with constant weights: its input windows as rows (im2col_nhwc) times each
  // group's weights, [N x OH x OW, R x S x Cg] x [R x S x Cg, Kg], on the tuned matmul kernel
  // (batch_matmul over several groups), the groups' columns then joined into the NHWC output
  // with the bias (join_groups). One group's matmul is the importer's task for the node (its
  // im2col_task, the same workload), so a plan's schedule runs it. The plain NCHW loop it
  // replaces ran Inception v3's 1x7 and 7x1 convs at 0.01x ONNX Runtime.
  // One group's matmul runs the nodes the fusion pass gave the conv (activations, a GELU) in its
  // epilogue where it computes them; the others run after it. Returns its chain (out: the
  // tensor it writes; rest: the nodes left), nullopt (nothing added) where
  // conv_as_matmuls_fits says no.
  // io: the NHWC slots to read and write instead of the node's tensors (a 1-D conv's [N, L, C]
  // views, whose caller runs the rest after its layout step); those take the matmul route,
  // never the direct grouped one.
  std::optional<Chain> add_conv_as_matmuls(const frontend::GraphNode& n, const onnx::NodeProto& p, const Shape& xs,
                                           const Shape& ws, const Shape& ys, const ConvAttrs& a,
                                           const NhwcSlots& io = {});

  // A one-group conv whose taps read mostly padding, region by region (frontend/phase_conv.hpp,
  // sparse_conv_regions): the regions' im2col rows (only the taps that read the image), a
  // matmul of each region's rows with its taps' weights and the chain's epilogue, then each
  // region's outputs to its pixels. ASPP's dilation-36 conv on a 32 x 32 map is a 1 x 1 conv
  // there, where the one im2col matmul multiplied eight zero taps of nine.
  // rc: the conv's 2-D view, its kernel width s, weights b [(u, v, ci)][ko], regions, epilogue
  // and per-channel operands; in: its NHWC input slot; out: makes its NHWC output slot.
  struct RegionConv {
    const Shape& xs;
    const Shape& ys;
    const ConvAttrs& a;
    std::int64_t s;
    const std::vector<float>& b;
    const std::vector<frontend::ConvRegion>& regions;
    const std::vector<std::string>& epilogue;
    ChannelData channels;
  };
  void add_conv_regions(const frontend::GraphNode& n, const RegionConv& rc, int in, const std::function<int()>& out);
  // The rows of rc.b for the taps region g reads, in its im2col rows' order.
  static std::vector<float> region_weights(const RegionConv& rc, const frontend::ConvRegion& g);

  // A grouped conv of 2, 4, 8 or 16 channels a group, in NHWC, with the Relu that alone reads it.
  void add_grouped_conv(const frontend::GraphNode& n, const Shape& xs, const Shape& ys, GroupedConv g,
                        std::vector<float> packed, const float* bias);

  // A ConvTranspose's groups, strides, dilations and top and left pads (auto_pad's included).
  ConvAttrs conv_transpose_attrs(const frontend::GraphNode& n, const onnx::NodeProto& p, const Shape& xs,
                                 const Shape& ws, const Shape& ys) const;

  void add_conv_transpose(const frontend::GraphNode& n, const onnx::NodeProto& p);
  // Conv, ConvTranspose, MaxPool and AveragePool of 3 and more spatial dims (volume_ops.hpp);
  // false where the input has fewer.
  bool add_window_nd(const frontend::GraphNode& n, const onnx::NodeProto& p);
  // A 3-D Conv of one group with constant weights whose H and W window a 2-D host kernel takes
  // (frontend/phase_conv.hpp, depth_conv_dims), as that kernel run depth by depth over
  // gather_depth_taps's [H, W, taps x C] input, NDHWC in and out; the nodes the importer fused
  // into its task (a folded BN, a residual's Add, a Relu) in the kernel's epilogue. False where
  // it does not apply.
  bool add_conv3d_kernel(const frontend::GraphNode& n, const onnx::NodeProto& p, const WindowNd& a);
  // LpPool and GlobalLpPool of any spatial rank (volume_ops.hpp's pool).
  void add_lp_pool(const frontend::GraphNode& n, const onnx::NodeProto& p);
  WindowNd window_nd(const frontend::GraphNode& n, const onnx::NodeProto& p, const Shape& xs,
                     const std::vector<std::int64_t>& kernel, const Shape& ys, bool transposed) const;

  // ConstantOfShape: its `value` (one element; default 0) everywhere in the output's shape.
  void add_constant_of_shape(const frontend::GraphNode& n, const onnx::NodeProto& p);

  // DepthToSpace (DCR or CRD) and SpaceToDepth of [N, C, H, W]: a reshape to 6 dims and a
  // transpose, as ONNX defines them.
  void add_depth_space(const frontend::GraphNode& n, const onnx::NodeProto& p);

  // ArgMax / ArgMin along axis: the index (as a float, as the engine holds integers) of the
  // first extreme, or the last with select_last_index.
  void add_arg_reduce(const frontend::GraphNode& n, const onnx::NodeProto& p);

  // Range(start, limit, delta): start, start + delta, ... as many as the output holds.
  void add_range(const frontend::GraphNode& n, const onnx::NodeProto& p);

  void add_tile(const frontend::GraphNode& n);

  void add_instance_norm(const frontend::GraphNode& n, const onnx::NodeProto& p);
  // QuantizeLinear and DequantizeLinear (plain_ops.hpp, quantize_linear): scales and zero
  // points per tensor or per axis, constants or computed at run time (DynamicQuantizeLinear's);
  // a tensor a conv wrote NHWC stays NHWC.
  void add_quantize_linear(const frontend::GraphNode& n, const onnx::NodeProto& p);
  // The DequantizeLinear nodes that read QuantizeLinear n's output (not a graph output), each
  // with the same scale, zero point and axis, when no other node reads it: the Quantize and
  // the first runs as one round trip, whose output the others' outputs are (alias_of; an
  // operator-form model dequantizes one QLinear op's output for each QLinear op reading it).
  // Empty for none.
  std::vector<int> dequantizing_readers(const frontend::GraphNode& n, const onnx::NodeProto& p) const;
  // Tensor `to` held where tensor `from` is (the same values, in the same slots).
  void alias_of(int from, int to) {
    values[to].plain = values[from].plain;
    values[to].nhwc = values[from].nhwc;
    values[to].nhwc_first = values[from].nhwc_first;
  }
  void add_dynamic_quantize_linear(const frontend::GraphNode& n);

  // Resize (opset 10: scales; 11+: roi, scales, sizes) and Upsample (7: scales attribute; 9:
  // scales input, asymmetric coordinates) of the dims after the second of a 3-D to 5-D tensor.
  void add_resize(const frontend::GraphNode& n, const onnx::NodeProto& p);
  // The scales a Resize or Upsample maps output coordinates back by, one per dim: those given
  // (an attribute or a constant input, per opset 18's axes), else out / in for sizes, or the one
  // scale keep_aspect_ratio_policy takes from constant sizes.
  std::vector<float> resize_scales(const frontend::GraphNode& n, const onnx::NodeProto& p, const Shape& xs,
                                   const Shape& ys) const;

  void add_plain_gemm(const frontend::GraphNode& n, const onnx::NodeProto& p);

  // --- memory -----------------------------------------------------------------------------

  // Each input copied into its slot (an integer input checked first).
  void load_inputs(const std::vector<const float*>& in);

  void plan_arena();
};

}  // namespace atvoss::engine
