"""What runs beside the candidate: the code of the jailed worker processes (the trust boundary).

Everything in this subpackage executes inside a worker's jail, in a process that also runs untrusted code (the
candidate's, or a task's reference) or is started for it: the serve loop and its side of the channel, the
harnesses of the candidate and the reference, the cross-compiler and the task checker, the integrity monitors
(tripwires: code in the same process can defeat them), timing, and the tensor file format. Nothing computed
here is believed by the parent because it was computed here: the parent (`kernelvault.toolchain.judge`, outside
this subpackage) compares every output itself with `kernelvault.toolchain.compare`, which is why compare lives
outside. The request records (`requests`), the channel (`channel`) and the tensor files (`tensor_files`) are the
formats both sides share; the parent imports them and nothing else from here. From the rest of the project
this subpackage imports only the task formats (`function_tasks`, `kernel_tasks`), `kernelvault.hip` and where
the HIP-to-CUDA header lies: nothing of the judging side.
"""
