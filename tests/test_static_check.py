"""The static stage: is the code a Triton candidate at all?"""

from __future__ import annotations

import textwrap

from kernelvault.toolchain.static_check import check_triton_candidate

VALID = textwrap.dedent(
    """
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


    @triton.jit
    def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
        pass


    def helper(x):
        return x


    class ModelNew(torch.nn.Module):
        def forward(self, x, y):
            out = torch.empty_like(x)
            add_kernel[(1,)](x, y, out, x.numel(), BLOCK=1024)
            return out
    """
)


def test_valid_candidate_passes_and_lists_its_kernels():
    result = check_triton_candidate(VALID)
    assert result.failure_kind is None
    assert result.kernels == ("add_kernel", "scale_kernel")


def test_autotune_stacked_over_jit_counts_as_a_kernel():
    code = textwrap.dedent(
        """
        import triton
        import triton.language as tl


        @triton.autotune(configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 256})], key=["n"])
        @triton.jit
        def tuned(x_ptr, n, BLOCK: tl.constexpr):
            pass


        class ModelNew:
            pass
        """
    )
    result = check_triton_candidate(code)
    assert result.failure_kind is None
    assert result.kernels == ("tuned",)


def test_missing_model_new_is_rejected():
    code = VALID.replace("class ModelNew", "class Model")
    result = check_triton_candidate(code)
    assert result.failure_kind == "static_reject"
    assert "ModelNew" in result.message
    assert result.kernels == ()


def test_no_jit_kernel_is_rejected():
    code = "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n"
    result = check_triton_candidate(code)
    assert result.failure_kind == "static_reject"
    assert "jit" in result.message


def test_nested_jit_kernel_is_rejected_by_name():
    code = textwrap.dedent(
        """
        import torch
        import triton


        def make_kernel():
            @triton.jit
            def inner_kernel(x_ptr):
                pass

            return inner_kernel


        class ModelNew(torch.nn.Module):
            def forward(self, x):
                make_kernel()[(1,)](x)
                return x
        """
    )
    result = check_triton_candidate(code)
    assert result.failure_kind == "static_reject"
    assert "inner_kernel" in result.message


def test_nested_kernel_is_rejected_even_beside_a_module_level_one():
    code = VALID.replace(
        "    def forward(self, x, y):",
        "    @triton.jit\n    def method_kernel(x_ptr):\n        pass\n\n    def forward(self, x, y):",
    )
    result = check_triton_candidate(code)
    assert result.failure_kind == "static_reject"
    assert "method_kernel" in result.message


def test_syntax_error_is_a_compile_error_with_line_number():
    code = "import triton\n\n\nclass ModelNew:\n    def forward(self x):\n        return x\n"
    result = check_triton_candidate(code)
    assert result.failure_kind == "compile_error"
    assert "line 5" in result.message
