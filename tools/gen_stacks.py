#!/usr/bin/env python3
"""Writes tests/fixtures/stacks/*.json: small CUDA snapshots (the JSON form of
`torch.cuda.memory._dump_snapshot()`) whose frames have the shapes the common training and
serving stacks really produce, for the band-inference tests (tests/cli/right_answers.rs). The
expected bands at each file's peak are computed by hand in tests/fixtures/stacks/README.md.

Usage: tools/gen_stacks.py --out tests/fixtures/stacks   (plain Python, no torch; deterministic)

Frames are listed innermost first, as PyTorch records them. Where each shape comes from
(function names as in these sources; line numbers in the frames are illustrative):
- torch.optim: `Optimizer.profile_hook_step.<locals>.wrapper` and `_use_grad_for_differentiable`'s
  `_use_grad` (torch/optim/optimizer.py) wrap every `step`; Adam/AdamW create their state in
  `_init_group` (torch/optim/adam.py, adamw.py); LBFGS.step calls `closure()` itself and keeps
  `_gather_flat_grad()`'s result and its direction history in `state` (torch/optim/lbfgs.py).
- The autograd engine runs CUDA backward on its own device thread: C++ frames only, from
  `execute_native_thread_routine` (libstdc++ thread48.o) through
  `torch::autograd::Engine::thread_main` and `evaluate_function` to the node
  (`torch::autograd::generated::AddmmBackward0::apply`, `torch::autograd::AccumulateGrad::apply`).
- Lightning automatic optimization (Lightning-AI/pytorch-lightning, commit 0407e849,
  src/lightning/pytorch/loops/optimization/automatic.py): `_AutomaticOptimization.run` ->
  `_optimizer_step` -> `call._call_lightning_module_hook(trainer, "optimizer_step", ...,
  train_step_and_backward_closure)` -> LightningModule.optimizer_step -> LightningOptimizer.step
  (core/optimizer.py) -> Strategy.optimizer_step -> Precision.optimizer_step ->
  `optimizer.step(closure=closure)` -> Adam.step -> `closure()` -> Precision._wrap_closure ->
  `Closure.__call__` -> `Closure.closure` -> `_training_step` -> `call._call_strategy_hook(trainer,
  "training_step", ...)` -> Strategy.training_step -> the user's training_step -> the model.
  So every forward activation has `/optim/` frames further out.
- Lightning manual optimization (loops/optimization/manual.py): `_ManualOptimization.run` ->
  `advance` -> `_call_strategy_hook(trainer, "training_step")`; the user's training_step calls
  `opt.step()` (LightningOptimizer.step -> ... -> Adam.step) itself.
- Hugging Face Trainer (transformers/trainer.py): `train` -> `_inner_training_loop` ->
  `training_step` -> `compute_loss` -> `model(**inputs)`; `self.accelerator.backward(loss)`;
  `self.optimizer.step()` (accelerate/optimizer.py AcceleratedOptimizer.step, under the
  lr_scheduler's `wrapper` in torch/optim/lr_scheduler.py).
- DeepSpeed ZeRO-3 (deepspeed/runtime/zero/): parameters are partitioned at construction
  (`partition_parameters.py` `_post_init_method` -> `_partition_param`) and gathered before each
  module's forward (`parameter_offload.py` `_pre_forward_module_hook` ->
  `partitioned_param_coordinator.py` `fetch_sub_module` -> `partition_parameters.py`
  `all_gather_coalesced`); gradients are reduced into partitions by
  `stage3.py` `__reduce_and_partition_ipg_grads`; fp32 master partitions by
  `_create_fp32_partitions`; Adam state by deepspeed/ops/adam/fused_adam.py `step`.
- FSDP 1 (torch/distributed/fsdp/): `_flat_param.py` `FlatParamHandle.__init__` ->
  `_init_flat_param_and_metadata` -> `flatten_tensors_into_flat_param` (the sharded flat
  parameter); forward: `fully_sharded_data_parallel.py` `forward` -> `_runtime_utils.py`
  `_pre_forward` -> `_pre_forward_unshard` -> `_unshard` -> `_flat_param.py` `unshard` ->
  `_alloc_padded_unsharded_flat_param`; backward: `_post_backward_hook` -> `_reduce_grad`.
- FSDP 2 (torch/distributed/fsdp/_fully_shard/): `_fsdp_param.py` `FSDPParam.__init__` ->
  `_init_sharded_param`; `_fsdp_state.py` `_pre_forward` -> `_fsdp_param_group.py` `unshard` ->
  `_fsdp_collectives.py` `foreach_all_gather`; `post_backward` -> `foreach_reduce`.
- torch.compile: the compiled graph's `call` (a generated file under /tmp/torchinductor_*)
  under torch/_inductor/output_code.py `__call__`, torch/_functorch/_aot_autograd/
  runtime_wrappers.py (`runtime_wrapper`, CompiledFunction `forward` / `backward` ->
  `_backward_impl` -> `call_compiled_backward`), torch/_dynamo/eval_frame.py `_fn`.
- vLLM (v1): weights by the layers' `create_weights` under model_loader `load_model`;
  KV cache by gpu_model_runner.py `_allocate_kv_cache_tensors` <- `initialize_kv_cache`;
  CUDA graphs captured by `capture_model` -> `_dummy_run` -> compilation/cuda_graph.py
  `__call__` -> the model's forward.
- SGLang: model_loader/loader.py `load_model` -> layers' `create_weights`; the KV pool by
  mem_cache/memory_pool.py `_create_buffers`; graphs by model_executor/cuda_graph_runner.py
  `capture` -> `capture_one_batch_size` -> `run_once` -> the model's forward.
"""
import argparse
import json
import os

MiB = 1 << 20
SP = "/usr/lib/python3.10/site-packages"
T = f"{SP}/torch"
L = f"{SP}/lightning/pytorch"
DS = f"{SP}/deepspeed"
HF = f"{SP}/transformers"
VL = f"{SP}/vllm"
SG = f"{SP}/sglang/srt"


def fr(file, line, name):
    return {"filename": file, "line": line, "name": name}


def cxx(*names):
    return [fr("??", 0, n) for n in names]


ALLOC = cxx("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc",
            "at::empty_cuda")
ENGINE = cxx("torch::autograd::Node::operator()", "torch::autograd::call_function",
             "torch::autograd::Engine::evaluate_function",
             "torch::autograd::Engine::thread_main",
             "torch::autograd::Engine::thread_init",
             "torch::autograd::python::PythonEngine::thread_init") + \
    [fr("thread48.o", 0, "execute_native_thread_routine")] + cxx("start_thread", "clone")


def grad_stack():
    """A gradient: AccumulateGrad on the autograd engine's device thread (C++ only)."""
    return ALLOC + cxx("torch::autograd::AccumulateGrad::apply") + ENGINE


def bwd_stack():
    """A backward intermediate of an autograd node, on the engine thread."""
    return ALLOC + cxx("at::mm", "torch::autograd::generated::AddmmBackward0::apply") + ENGINE


def module_call(user_file, user_line, user_fn):
    """nn.Linear.forward called through Module.__call__."""
    return [fr(f"{T}/nn/modules/linear.py", 125, "forward"),
            fr(f"{T}/nn/modules/module.py", 1750, "_call_impl"),
            fr(f"{T}/nn/modules/module.py", 1739, "_wrapped_call_impl"),
            fr(user_file, user_line, user_fn)]


def to_device(outer):
    """Module.to(): parameters copied to the GPU."""
    return [fr(f"{T}/nn/modules/module.py", 1341, "convert"),
            fr(f"{T}/nn/modules/module.py", 928, "_apply"),
            fr(f"{T}/nn/modules/module.py", 1355, "to")] + outer


def torch_step(opt_file, outer):
    """Optimizer.step as torch.optim wraps it."""
    return [fr(opt_file, 226, "step"),
            fr(f"{T}/optim/optimizer.py", 79, "_use_grad"),
            fr(f"{T}/optim/optimizer.py", 487, "wrapper")] + outer


def init_group(opt_file, outer):
    return [fr("??", 0, "aten::zeros_like"), fr(opt_file, 156, "_init_group")] + torch_step(opt_file, outer)


MAIN = [fr("/workspace/train.py", 80, "main"), fr("/workspace/train.py", 90, "<module>")]
ADAM = f"{T}/optim/adam.py"
ADAMW = f"{T}/optim/adamw.py"

# --- Lightning: the loop that calls optimizer.step(closure), and the closure's inside.
L_LOOP = [fr(f"{L}/loops/optimization/automatic.py", 250, "_optimizer_step"),
          fr(f"{L}/loops/optimization/automatic.py", 185, "run"),
          fr(f"{L}/loops/training_epoch_loop.py", 318, "advance"),
          fr(f"{L}/loops/training_epoch_loop.py", 140, "run"),
          fr(f"{L}/loops/fit_loop.py", 205, "run"),
          fr(f"{L}/trainer/trainer.py", 981, "_run_stage"),
          fr(f"{L}/trainer/trainer.py", 575, "fit")] + MAIN
L_STEP = [fr(f"{L}/plugins/precision/precision.py", 123, "optimizer_step"),
          fr(f"{L}/strategies/strategy.py", 238, "optimizer_step"),
          fr(f"{L}/core/optimizer.py", 154, "step"),
          fr(f"{L}/core/module.py", 1306, "optimizer_step"),
          fr(f"{L}/trainer/call.py", 176, "_call_lightning_module_hook")] + L_LOOP
L_CLOSURE = [fr("/workspace/model.py", 30, "training_step"),
             fr(f"{L}/strategies/strategy.py", 390, "training_step"),
             fr(f"{L}/trainer/call.py", 319, "_call_strategy_hook"),
             fr(f"{L}/loops/optimization/automatic.py", 318, "_training_step"),
             fr(f"{L}/loops/optimization/automatic.py", 129, "closure"),
             fr(f"{L}/loops/optimization/automatic.py", 144, "__call__"),
             fr(f"{L}/plugins/precision/precision.py", 108, "_wrap_closure")] + \
    torch_step(ADAM, L_STEP)
L_MANUAL = [fr("/workspace/model.py", 41, "training_step"),
            fr(f"{L}/strategies/strategy.py", 390, "training_step"),
            fr(f"{L}/trainer/call.py", 319, "_call_strategy_hook"),
            fr(f"{L}/loops/optimization/manual.py", 132, "advance"),
            fr(f"{L}/loops/optimization/manual.py", 95, "run"),
            fr(f"{L}/loops/training_epoch_loop.py", 320, "advance")] + MAIN
L_MANUAL_STEP = [fr(f"{L}/plugins/precision/precision.py", 123, "optimizer_step"),
                 fr(f"{L}/strategies/strategy.py", 238, "optimizer_step"),
                 fr(f"{L}/core/optimizer.py", 154, "step"),
                 fr("/workspace/model.py", 47, "training_step")] + L_MANUAL[1:]


def linear_fwd(outer):
    return [fr("??", 0, "aten::addmm"), fr(f"{T}/nn/modules/linear.py", 125, "forward"),
            fr(f"{T}/nn/modules/module.py", 1750, "_call_impl"),
            fr(f"{T}/nn/modules/module.py", 1739, "_wrapped_call_impl"),
            fr("/workspace/model.py", 20, "forward"),
            fr(f"{T}/nn/modules/module.py", 1750, "_call_impl"),
            fr(f"{T}/nn/modules/module.py", 1739, "_wrapped_call_impl")] + outer


# --- Hugging Face Trainer
HF_LOOP = [fr(f"{HF}/trainer.py", 2481, "_inner_training_loop"),
           fr(f"{HF}/trainer.py", 2122, "train")] + MAIN
HF_FWD = [fr("??", 0, "aten::mm"), fr(f"{HF}/models/llama/modeling_llama.py", 155, "forward"),
          fr(f"{T}/nn/modules/module.py", 1750, "_call_impl"),
          fr(f"{T}/nn/modules/module.py", 1739, "_wrapped_call_impl"),
          fr(f"{HF}/trainer.py", 3790, "compute_loss"),
          fr(f"{HF}/trainer.py", 3736, "training_step")] + HF_LOOP
HF_TO = to_device([fr(f"{HF}/modeling_utils.py", 3698, "to"),
                   fr(f"{HF}/trainer.py", 604, "_move_model_to_device"),
                   fr(f"{HF}/trainer.py", 560, "__init__")] + MAIN)
HF_STATE = init_group(ADAMW, [fr(f"{T}/optim/lr_scheduler.py", 137, "wrapper"),
                              fr(f"{SP}/accelerate/optimizer.py", 178, "step")] + HF_LOOP)

# --- DeepSpeed ZeRO-3
Z = f"{DS}/runtime/zero"
DS_PART = [fr("??", 0, "aten::empty"), fr(f"{Z}/partition_parameters.py", 1507, "_partition_param"),
           fr(f"{Z}/partition_parameters.py", 1290, "partition"),
           fr(f"{Z}/partition_parameters.py", 1050, "_post_init_method"),
           fr(f"{Z}/partition_parameters.py", 520, "wrapper"),
           fr("/workspace/model.py", 12, "__init__")] + MAIN
DS_GATHER = [fr("??", 0, "aten::empty"), fr(f"{Z}/partition_parameters.py", 1204, "all_gather_coalesced"),
             fr(f"{Z}/partitioned_param_coordinator.py", 480, "__all_gather_params_"),
             fr(f"{Z}/partitioned_param_coordinator.py", 330, "fetch_sub_module"),
             fr(f"{Z}/parameter_offload.py", 470, "pre_sub_module_forward_function"),
             fr(f"{Z}/parameter_offload.py", 340, "_pre_forward_module_hook"),
             fr(f"{T}/nn/modules/module.py", 1750, "_call_impl"),
             fr(f"{T}/nn/modules/module.py", 1739, "_wrapped_call_impl"),
             fr(f"{DS}/runtime/engine.py", 1899, "forward")] + MAIN
DS_FWD = [fr("??", 0, "aten::addmm"), fr(f"{T}/nn/modules/linear.py", 125, "forward"),
          fr(f"{T}/nn/modules/module.py", 1750, "_call_impl"),
          fr(f"{DS}/runtime/engine.py", 1899, "forward")] + MAIN
DS_GRAD = [fr("??", 0, "aten::empty"),
           fr(f"{Z}/stage3.py", 1340, "_DeepSpeedZeroOptimizer_Stage3__reduce_and_partition_ipg_grads"),
           fr(f"{Z}/stage3.py", 1280, "reduce_independent_p_g_buckets_and_remove_grads"),
           fr(f"{Z}/stage3.py", 1250, "reduce_ready_partitions_and_remove_grads"),
           fr(f"{Z}/stage3.py", 1190, "reduce_partition_and_remove_grads")] + \
    cxx("torch::autograd::CppFunctionTensorPreHook::operator()") + ENGINE
DS_FP32 = [fr("??", 0, "aten::clone"), fr(f"{Z}/stage3.py", 860, "_create_fp32_partitions"),
           fr(f"{Z}/stage3.py", 330, "__init__"),
           fr(f"{DS}/runtime/engine.py", 1700, "_configure_zero_optimizer")] + MAIN
DS_STATE = [fr("??", 0, "aten::zeros_like"), fr(f"{DS}/ops/adam/fused_adam.py", 180, "step"),
            fr(f"{Z}/stage3.py", 1990, "_optimizer_step"), fr(f"{Z}/stage3.py", 2110, "step"),
            fr(f"{DS}/runtime/engine.py", 2210, "_take_model_step"),
            fr(f"{DS}/runtime/engine.py", 2290, "step")] + MAIN

# --- FSDP 1 and 2
F1 = f"{T}/distributed/fsdp"
F1_FLAT = [fr("??", 0, "aten::cat"), fr(f"{F1}/_flat_param.py", 800, "flatten_tensors_into_flat_param"),
           fr(f"{F1}/_flat_param.py", 620, "_init_flat_param_and_metadata"),
           fr(f"{F1}/_flat_param.py", 560, "__init__"),
           fr(f"{F1}/_init_utils.py", 600, "_init_param_handle_from_params"),
           fr(f"{F1}/fully_sharded_data_parallel.py", 480, "__init__")] + MAIN
F1_FWD_OUTER = [fr(f"{T}/nn/modules/module.py", 1750, "_call_impl"),
                fr(f"{T}/nn/modules/module.py", 1739, "_wrapped_call_impl")] + MAIN
F1_UNSHARD = [fr("??", 0, "aten::empty"), fr(f"{F1}/_flat_param.py", 1400, "_alloc_padded_unsharded_flat_param"),
              fr(f"{F1}/_flat_param.py", 1380, "unshard"),
              fr(f"{F1}/_runtime_utils.py", 290, "_unshard"),
              fr(f"{F1}/_runtime_utils.py", 540, "_pre_forward_unshard"),
              fr(f"{F1}/_runtime_utils.py", 520, "_pre_forward"),
              fr(f"{F1}/fully_sharded_data_parallel.py", 850, "forward")] + F1_FWD_OUTER
F1_ACT = [fr("??", 0, "aten::addmm"), fr(f"{T}/nn/modules/linear.py", 125, "forward"),
          fr(f"{T}/nn/modules/module.py", 1750, "_call_impl"),
          fr(f"{F1}/fully_sharded_data_parallel.py", 863, "forward")] + F1_FWD_OUTER
F1_GRAD = [fr("??", 0, "aten::empty"), fr(f"{F1}/_runtime_utils.py", 820, "_reduce_grad"),
           fr(f"{F1}/_runtime_utils.py", 760, "_post_backward_hook")] + \
    cxx("torch::autograd::CppFunctionTensorPreHook::operator()") + ENGINE
F2 = f"{T}/distributed/fsdp/_fully_shard"
F2_SHARD = [fr("??", 0, "aten::empty"), fr(f"{F2}/_fsdp_param.py", 330, "_init_sharded_param"),
            fr(f"{F2}/_fsdp_param.py", 230, "__init__"),
            fr(f"{F2}/_fsdp_param_group.py", 130, "__init__"),
            fr(f"{F2}/_fully_shard.py", 210, "fully_shard")] + MAIN
F2_GATHER = [fr("??", 0, "aten::empty"), fr(f"{F2}/_fsdp_collectives.py", 190, "foreach_all_gather"),
             fr(f"{F2}/_fsdp_param_group.py", 280, "unshard"),
             fr(f"{F2}/_fsdp_state.py", 230, "_pre_forward")] + F1_FWD_OUTER
F2_GRAD = [fr("??", 0, "aten::empty"), fr(f"{F2}/_fsdp_collectives.py", 420, "foreach_reduce"),
           fr(f"{F2}/_fsdp_param_group.py", 440, "post_backward")] + \
    cxx("torch::autograd::PyFunctionTensorPreHook::operator()") + ENGINE

# --- torch.compile
AOT = f"{T}/_functorch/_aot_autograd/runtime_wrappers.py"
C_FWD = [fr("??", 0, "aten::empty_strided"), fr("/tmp/torchinductor_root/xk/cxkq.py", 210, "call"),
         fr(f"{T}/_inductor/output_code.py", 460, "__call__"),
         fr(AOT, 124, "call_func_at_runtime_with_args"), fr(AOT, 1590, "forward"),
         fr(f"{T}/autograd/function.py", 575, "apply"), fr(AOT, 320, "runtime_wrapper"),
         fr(f"{T}/_dynamo/eval_frame.py", 655, "_fn"),
         fr(f"{T}/nn/modules/module.py", 1750, "_call_impl"),
         fr(f"{T}/nn/modules/module.py", 1739, "_wrapped_call_impl"),
         fr("/workspace/train.py", 60, "train_step")] + MAIN
C_BWD = [fr("??", 0, "aten::empty_strided"), fr("/tmp/torchinductor_root/ab/cabz.py", 330, "call"),
         fr(f"{T}/_inductor/output_code.py", 460, "__call__"),
         fr(AOT, 124, "call_func_at_runtime_with_args"), fr(AOT, 2060, "call_compiled_backward"),
         fr(AOT, 2100, "_backward_impl"), fr(AOT, 1960, "backward"),
         fr(f"{T}/autograd/function.py", 307, "apply")] + cxx("torch::autograd::PyNode::apply") + ENGINE

# --- LBFGS: step calls closure(); its history lives in state
LB = f"{T}/optim/lbfgs.py"
LB_STEP = [fr(LB, 330, "step"), fr(f"{T}/optim/optimizer.py", 79, "_use_grad"),
           fr(f"{T}/optim/optimizer.py", 487, "wrapper"),
           fr("/workspace/train.py", 70, "train")] + MAIN
LB_CLOSURE = [fr("/workspace/train.py", 64, "closure")] + LB_STEP
LB_FLAT = [fr("??", 0, "aten::cat"), fr(LB, 270, "_gather_flat_grad")] + LB_STEP
LB_DIR = [fr("??", 0, "aten::sub"), fr(LB, 380, "step")] + LB_STEP[1:]

# --- vLLM and SGLang
V1 = f"{VL}/v1/worker"
V_W = [fr("??", 0, "aten::empty"), fr(f"{VL}/model_executor/layers/linear.py", 300, "create_weights"),
       fr(f"{VL}/model_executor/layers/linear.py", 280, "__init__"),
       fr(f"{VL}/model_executor/models/llama.py", 80, "__init__"),
       fr(f"{VL}/model_executor/model_loader/base_loader.py", 44, "load_model"),
       fr(f"{V1}/gpu_model_runner.py", 1800, "load_model"),
       fr(f"{V1}/gpu_worker.py", 180, "load_model")] + MAIN
V_KV = [fr("??", 0, "aten::zeros"), fr(f"{V1}/gpu_model_runner.py", 2600, "_allocate_kv_cache_tensors"),
        fr(f"{V1}/gpu_model_runner.py", 2700, "initialize_kv_cache_tensors"),
        fr(f"{V1}/gpu_model_runner.py", 2750, "initialize_kv_cache"),
        fr(f"{V1}/gpu_worker.py", 250, "initialize_from_config")] + MAIN
V_GRAPH = [fr("??", 0, "aten::mm"), fr(f"{VL}/model_executor/models/llama.py", 230, "forward"),
           fr(f"{T}/nn/modules/module.py", 1750, "_call_impl"),
           fr(f"{VL}/compilation/cuda_graph.py", 150, "__call__"),
           fr(f"{V1}/gpu_model_runner.py", 2200, "_dummy_run"),
           fr(f"{V1}/gpu_model_runner.py", 2400, "capture_model"),
           fr(f"{V1}/gpu_worker.py", 300, "compile_or_warm_up_model")] + MAIN
S_W = [fr("??", 0, "aten::empty"), fr(f"{SG}/layers/linear.py", 320, "create_weights"),
       fr(f"{SG}/layers/linear.py", 290, "__init__"),
       fr(f"{SG}/model_loader/loader.py", 370, "load_model"),
       fr(f"{SG}/model_executor/model_runner.py", 600, "load_model")] + MAIN
S_KV = [fr("??", 0, "aten::zeros"), fr(f"{SG}/mem_cache/memory_pool.py", 310, "_create_buffers"),
        fr(f"{SG}/mem_cache/memory_pool.py", 280, "__init__"),
        fr(f"{SG}/model_executor/model_runner.py", 1100, "init_memory_pool")] + MAIN
S_GRAPH = [fr("??", 0, "aten::mm"), fr(f"{SG}/models/llama.py", 300, "forward"),
           fr(f"{T}/nn/modules/module.py", 1750, "_call_impl"),
           fr(f"{SG}/model_executor/cuda_graph_runner.py", 520, "run_once"),
           fr(f"{SG}/model_executor/cuda_graph_runner.py", 480, "capture_one_batch_size"),
           fr(f"{SG}/model_executor/cuda_graph_runner.py", 400, "capture")] + MAIN

PLAIN_FWD = linear_fwd([fr("/workspace/train.py", 60, "train_step")] + MAIN)
PLAIN_TO = to_device([fr("/workspace/train.py", 40, "build_model")] + MAIN)
PLAIN_STATE = init_group(ADAM, [fr("/workspace/train.py", 62, "train_step")] + MAIN)
PLAIN_TEMP = [fr("??", 0, "aten::mul"), fr(ADAM, 400, "_multi_tensor_adam")] + \
    torch_step(ADAM, [fr("/workspace/train.py", 62, "train_step")] + MAIN)

# Each fixture: a list of (op, MiB, stack); op "keep" (never freed), "tmp" (freed after
# five more events: not a one-op temporary), "pre" (live before the recording began: a block in
# `segments` with no alloc in the trace), "oom" (an OOM of that size at the end).
FIXTURES = {
    "plain": [("keep", 64, PLAIN_TO), ("keep", 64, PLAIN_TO),
              ("tmp", 1, bwd_stack()), ("tmp", 1, PLAIN_TEMP),
              ("keep", 16, PLAIN_FWD), ("keep", 16, PLAIN_FWD),
              ("keep", 64, grad_stack()), ("keep", 64, grad_stack()),
              ("keep", 64, PLAIN_STATE), ("keep", 64, PLAIN_STATE),
              ("keep", 64, PLAIN_STATE), ("keep", 64, PLAIN_STATE)],
    "lightning_auto": [("keep", 64, to_device([fr(f"{L}/strategies/single_device.py", 80, "model_to_device")] + L_LOOP)),
                       ("keep", 64, to_device([fr(f"{L}/strategies/single_device.py", 80, "model_to_device")] + L_LOOP)),
                       ("tmp", 1, bwd_stack()),
                       ("keep", 32, linear_fwd(L_CLOSURE)), ("keep", 32, linear_fwd(L_CLOSURE)),
                       ("keep", 64, grad_stack()), ("keep", 64, grad_stack()),
                       ("keep", 64, init_group(ADAM, L_STEP)), ("keep", 64, init_group(ADAM, L_STEP)),
                       ("keep", 64, init_group(ADAM, L_STEP)), ("keep", 64, init_group(ADAM, L_STEP))],
    "lightning_oom": [("keep", 62, to_device([fr(f"{L}/strategies/single_device.py", 80, "model_to_device")] + L_LOOP)),
                      ("keep", 62, to_device([fr(f"{L}/strategies/single_device.py", 80, "model_to_device")] + L_LOOP))] +
                     [("keep", 512, linear_fwd(L_CLOSURE)) for _ in range(40)] +
                     [("oom", 1024, linear_fwd(L_CLOSURE))],
    "lightning_manual": [("keep", 64, to_device(L_LOOP)), ("keep", 64, to_device(L_LOOP)),
                         ("tmp", 1, bwd_stack()),
                         ("keep", 32, linear_fwd(L_MANUAL)), ("keep", 32, linear_fwd(L_MANUAL)),
                         ("keep", 64, grad_stack()), ("keep", 64, grad_stack()),
                         ("keep", 64, init_group(ADAM, L_MANUAL_STEP)),
                         ("keep", 64, init_group(ADAM, L_MANUAL_STEP))],
    "hf_trainer": [("keep", 64, HF_TO), ("keep", 64, HF_TO), ("tmp", 1, bwd_stack()),
                   ("keep", 32, HF_FWD), ("keep", 32, HF_FWD),
                   ("keep", 64, grad_stack()), ("keep", 64, grad_stack()),
                   ("keep", 64, HF_STATE), ("keep", 64, HF_STATE),
                   ("keep", 64, HF_STATE), ("keep", 64, HF_STATE)],
    "deepspeed_zero3": [("keep", 16, DS_PART), ("keep", 16, DS_PART), ("keep", 32, DS_FP32),
                        ("tmp", 1, bwd_stack()),
                        ("keep", 64, DS_GATHER), ("keep", 8, DS_FWD), ("keep", 8, DS_FWD),
                        ("keep", 16, DS_GRAD), ("keep", 16, DS_GRAD),
                        ("keep", 32, DS_STATE), ("keep", 32, DS_STATE)],
    "fsdp1": [("keep", 32, F1_FLAT), ("tmp", 1, bwd_stack()), ("keep", 128, F1_UNSHARD),
              ("keep", 16, F1_ACT), ("keep", 16, F1_ACT), ("keep", 32, F1_GRAD),
              ("keep", 32, init_group(ADAMW, [fr("/workspace/train.py", 62, "train_step")] + MAIN)),
              ("keep", 32, init_group(ADAMW, [fr("/workspace/train.py", 62, "train_step")] + MAIN))],
    "fsdp2": [("keep", 32, F2_SHARD), ("tmp", 1, bwd_stack()), ("keep", 128, F2_GATHER),
              ("keep", 16, linear_fwd(F1_FWD_OUTER)), ("keep", 16, linear_fwd(F1_FWD_OUTER)),
              ("keep", 32, F2_GRAD),
              ("keep", 32, init_group(ADAMW, [fr("/workspace/train.py", 62, "train_step")] + MAIN)),
              ("keep", 32, init_group(ADAMW, [fr("/workspace/train.py", 62, "train_step")] + MAIN))],
    "compile": [("keep", 64, PLAIN_TO), ("tmp", 1, C_BWD), ("keep", 32, C_FWD), ("keep", 32, C_FWD),
                ("keep", 64, C_BWD),
                ("keep", 64, PLAIN_STATE), ("keep", 64, PLAIN_STATE)],
    "lbfgs": [("keep", 64, PLAIN_TO), ("tmp", 1, bwd_stack()),
              ("keep", 32, linear_fwd(LB_CLOSURE)), ("keep", 32, linear_fwd(LB_CLOSURE)),
              ("keep", 64, grad_stack()), ("keep", 64, LB_FLAT), ("keep", 64, LB_DIR), ("keep", 64, LB_DIR)],
    "vllm": [("tmp", 1, V_GRAPH), ("keep", 128, V_W), ("keep", 128, V_W),
             ("keep", 512, V_KV), ("keep", 512, V_KV), ("keep", 32, V_GRAPH)],
    "sglang": [("tmp", 1, S_GRAPH), ("keep", 128, S_W), ("keep", 128, S_W),
               ("keep", 512, S_KV), ("keep", 512, S_KV), ("keep", 32, S_GRAPH)],
    # Weights loaded before `_record_memory_history`: four 64 MiB parameters live from the
    # start, each paired by one AccumulateGrad gradient of its size; two Adam states per
    # parameter at the first step; an 8 MiB block nothing in the file explains.
    "before_recording": [("pre", 64, []), ("pre", 64, []), ("pre", 64, []), ("pre", 64, []),
                         ("pre", 8, []),
                         ("tmp", 1, bwd_stack()),
                         ("keep", 32, PLAIN_FWD),
                         ("keep", 64, grad_stack()), ("keep", 64, grad_stack()),
                         ("keep", 64, grad_stack()), ("keep", 64, grad_stack())] +
                        [("keep", 64, PLAIN_STATE) for _ in range(8)],
    # The same weights, with the gradients as real CUDA runs allocate them: AccumulateGrad
    # steals the incoming gradient, so each 64 MiB gradient's allocation names the backward
    # op (AddmmBackward0 on the engine thread), kept to the end; five 64 MiB blocks before
    # the recording and four gradients of that size: four parameters (by order), one unknown.
    "before_recording_stolen": [("pre", 64, []) for _ in range(5)] +
                               [("tmp", 1, bwd_stack()),
                                ("keep", 32, PLAIN_FWD)] +
                               [("keep", 64, bwd_stack()) for _ in range(4)] +
                               [("keep", 64, PLAIN_STATE) for _ in range(8)],
}


def build(spec):
    base = 0x7F0000000000
    t = 1_800_000_000_000_000
    trace, blocks, frees = [], [], []
    addr = base
    live = []
    n_tmp_pending = []
    for op, mib, stack in spec:
        size = mib * MiB
        if op == "pre":
            blocks.append({"address": addr, "size": size, "requested_size": size,
                           "state": "active_allocated", "frames": stack})
            addr += size
            continue
        if op == "oom":
            t += 10
            trace.append({"action": "oom", "addr": 0, "size": size, "stream": 0, "time_us": t,
                          "device_free": 256 * MiB, "frames": stack})
            continue
        t += 10
        trace.append({"action": "alloc", "addr": addr, "size": size, "stream": 0, "time_us": t,
                      "frames": stack})
        if op == "tmp":
            n_tmp_pending.append((addr, size, stack, 5))
        else:
            blocks.append({"address": addr, "size": size, "requested_size": size,
                           "state": "active_allocated", "frames": stack})
        addr += size
        # free temporaries five events after their alloc
        still = []
        for a, s, st, k in n_tmp_pending:
            if k == 0:
                t += 10
                trace.append({"action": "free_requested", "addr": a, "size": s, "stream": 0,
                              "time_us": t, "frames": st})
                t += 1
                trace.append({"action": "free_completed", "addr": a, "size": s, "stream": 0,
                              "time_us": t, "frames": st})
            else:
                still.append((a, s, st, k - 1))
        n_tmp_pending = still
    assert not n_tmp_pending, "a temporary needs five later allocations"
    total = addr - base
    seg_size = ((total + 2 * MiB - 1) // (2 * MiB)) * 2 * MiB
    seg_blocks = sorted(blocks, key=lambda b: b["address"])
    # the holes left by freed temporaries and the tail are inactive
    out_blocks, cur = [], base
    for b in seg_blocks:
        if b["address"] > cur:
            out_blocks.append({"address": cur, "size": b["address"] - cur, "requested_size": 0,
                               "state": "inactive", "frames": []})
        out_blocks.append(b)
        cur = b["address"] + b["size"]
    if cur < base + seg_size:
        out_blocks.append({"address": cur, "size": base + seg_size - cur, "requested_size": 0,
                           "state": "inactive", "frames": []})
    alloc = sum(b["size"] for b in blocks)
    seg = {"device": 0, "address": base, "total_size": seg_size, "allocated_size": alloc,
           "active_size": alloc, "requested_size": alloc, "stream": 0, "segment_type": "large",
           "segment_pool_id": [0, 0], "is_expandable": False, "frames": [], "blocks": out_blocks}
    return {"segments": [seg], "device_traces": [trace], "allocator_settings": {},
            "external_annotations": []}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for name, spec in FIXTURES.items():
        with open(os.path.join(a.out, name + ".json"), "w") as f:
            json.dump(build(spec), f, separators=(",", ":"))
            f.write("\n")


if __name__ == "__main__":
    main()
