"""The parse stage: taking the candidate's code out of a model's answer."""

from __future__ import annotations

from kernelvault.toolchain.extract import extract_code

KERNEL = "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    pass\n"


def test_several_python_blocks_are_a_parse_error_not_a_guess():
    answer = (
        "The reference is:\n```python\nclass Model:\n    pass\n```\n"
        f"My kernel:\n```python\n{KERNEL}```\nDone."
    )
    result = extract_code(answer)
    assert result.code is None
    assert "2 python code blocks" in result.message


def test_python_label_is_preferred_over_later_unlabeled_block():
    answer = f"```python\n{KERNEL}```\nRun it with:\n```\npython run.py --fast\n```\n"
    assert extract_code(answer).code == KERNEL


def test_py_label_and_info_string_after_label():
    assert extract_code("```py\nx = 1\n```").code == "x = 1\n"
    assert extract_code("```python title=kernel.py\ny = 2\n```").code == "y = 2\n"


def test_tilde_fences():
    answer = f"Here it is:\n~~~python\n{KERNEL}~~~\n"
    assert extract_code(answer).code == KERNEL


def test_code_inside_think_is_ignored():
    answer = (
        "<think>Maybe this?\n```python\nraise SystemExit('draft')\n```\nNo, better:</think>\n"
        f"```python\n{KERNEL}```\n"
    )
    result = extract_code(answer)
    assert result.code == KERNEL
    assert "draft" not in result.code


def test_answer_with_code_only_in_think_is_a_parse_failure():
    result = extract_code("<think>\n```python\nx = 1\n```\n</think>\nI could not finish.")
    assert result.code is None
    assert result.message


def test_unlabeled_fence_used_when_no_python_label():
    answer = f"Answer:\n```\n{KERNEL}```\n"
    assert extract_code(answer).code == KERNEL


def test_only_cpp_blocks_is_a_parse_failure_naming_the_labels():
    answer = "```cpp\n__global__ void k() {}\n```\nand\n```c++\nint main() {}\n```\n"
    result = extract_code(answer)
    assert result.code is None
    assert "cpp" in result.message
    assert "c++" in result.message


def test_empty_python_block():
    result = extract_code("Here:\n```python\n\n   \n```\n")
    assert result.code is None
    assert "empty" in result.message


def test_unterminated_fence():
    result = extract_code(f"Here is the kernel:\n```python\n{KERNEL}")
    assert result.code is None
    assert "unterminated" in result.message


def test_plain_python_source_is_taken_whole():
    result = extract_code(KERNEL)
    assert result.code == KERNEL
    assert "plain" in result.message


def test_prose_is_a_parse_failure_with_a_message():
    result = extract_code("I am sorry, but I cannot write this kernel for you today.")
    assert result.code is None
    assert "not Python" in result.message


def test_empty_and_blank_answers():
    for answer in ("", "   \n\t\n", "<think>only thoughts</think>"):
        result = extract_code(answer)
        assert result.code is None
        assert "empty" in result.message


def test_a_fence_indented_in_a_list_item_is_read_without_its_indentation():
    indented = "".join(f"   {line}\n" if line else "\n" for line in KERNEL.splitlines())
    answer = f"Plan:\n\n1. Fuse the ops.\n2. The module:\n\n   ```python\n{indented}   ```\n\n3. Done.\n"
    result = extract_code(answer)
    assert result.code == KERNEL, result.message


def test_a_fence_in_a_blockquote_and_after_a_stray_closing_think_tag():
    quoted = "".join(f"> {line}\n" if line else ">\n" for line in KERNEL.splitlines())
    assert extract_code(f"> ```python\n{quoted}> ```\n").code == KERNEL
    # Qwen3 may drop the opening <think>: the closing tag on its own line is text, not an HTML block
    assert extract_code(f"planning\n</think>\n```python\n{KERNEL}```\n").code == KERNEL


def test_an_unterminated_fence_in_a_list_item_is_still_unterminated():
    result = extract_code("1. The kernel:\n\n   ```python\n   import torch\n")
    assert result.code is None and "unterminated" in result.message
