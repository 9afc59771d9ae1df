// Model zoo: built-in models expanded into their tunable tasks, so a job can say
// "model": "resnet50" without an ONNX file. Layer shapes follow the reference
// architectures (torchvision ResNet-50 v1.5, BERT-base, MobileNet-v2); each conv
// or matmul carries the epilogue chain that fusion may pull in (conv+bias+relu,
// conv+bias+add+relu for residuals, matmul+bias+gelu, matmul+bias+add+layernorm). An
// inference BatchNormalization after a conv folds into the conv's weights and bias, as
// every inference compiler folds it: the tables say "batchnorm", the tasks carry "bias".
// Pooling, embedding gathers and head transposes are tasks too: no zoo model has an
// untuned op (reshapes and flattens move no data).
// Pure functions: thread-safe.
#pragma once

#include <string>
#include <vector>

#include "frontend/task_set.hpp"

namespace atvoss::frontend {

// resnet50 (batch 1), resnet50-b32 (batch 32), bert-base (sequence 128, batch 1),
// mobilenet-v2 (batch 1), mlp (784-512-256-10, batch 64), yolov7-tiny (640 x 640),
// esrgan-rrdb (the RRDB body on 128 x 128), moe-block (a Mixtral-style block, 512 tokens).
const std::vector<std::string>& zoo_names();
bool is_zoo_model(const std::string& name);
// bad_input listing zoo_names() if name is unknown.
TaskSet zoo_model(const std::string& name);

}  // namespace atvoss::frontend
