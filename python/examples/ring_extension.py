"""A CUDA extension whose kernel uses the tshmem device API (ring_ext.cu), compiled with nvcc against the package
(tshmem.get_include(), tshmem.get_library_dir()) and loaded with ctypes.

Its device state needs one call, tshmem.init(), made before or after the extension loads: the extension links the
libtshmem that the package loaded, each of its units registers itself when the library loads, and tshmem fills
every registered unit at init (a unit that loads later is filled on arrival). Kernels then call tshmem:: functions.

    mpirun -np 2 python ring_extension.py   (one GPU per PE, or TSHMEM_ALLOW_SHARED_GPU=1)
"""
import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def build(tshmem):
    """Compiles ring_ext.cu once per source, package and PE (later runs load the library built before)."""
    nvcc = shutil.which('nvcc') or os.path.join(os.environ.get('CUDA_HOME', '/usr/local/cuda'), 'bin', 'nvcc')
    major, minor = torch.cuda.get_device_capability(tshmem.device())
    source = os.path.join(HERE, 'ring_ext.cu')
    with open(source, 'rb') as f:
        key = hashlib.sha1(f.read() + tshmem.get_library_dir().encode() + f'{major}{minor}'.encode()).hexdigest()[:12]
    out_dir = os.path.join(tempfile.gettempdir(), f'tshmem-ring-ext-{key}-pe{tshmem.my_pe()}')
    lib, libdir = os.path.join(out_dir, 'ring_ext.so'), tshmem.get_library_dir()
    if not os.path.exists(lib):
        os.makedirs(out_dir, exist_ok=True)
        subprocess.run([nvcc, '-shared', '-Xcompiler', '-fPIC', '-std=c++17', f'-arch=sm_{major}{minor}',
                        f'-I{tshmem.get_include()}', source, f'-L{libdir}', '-ltshmem', '-Xlinker', f'-rpath={libdir}',
                        '-o', lib + '.tmp'], check=True)
        os.rename(lib + '.tmp', lib)
    return ctypes.CDLL(lib)


def ring(tshmem, count=4096):
    me, n = tshmem.my_pe(), tshmem.n_pes()
    ext = build(tshmem)
    dst = tshmem.zeros(count, torch.float32)
    src = torch.arange(count, dtype=torch.float32, device=dst.device) - 1e4 * me
    stream = torch.cuda.current_stream(dst.device).cuda_stream
    rc = ext.ring_launch(ctypes.c_void_p(dst.data_ptr()), ctypes.c_void_p(src.data_ptr()), ctypes.c_size_t(count),
                         ctypes.c_void_p(stream))
    assert rc == 0, f'ring_launch: CUDA error {rc}'
    tshmem.barrier_all()  # on the same stream: every PE's stores are complete and visible
    expect = torch.arange(count, dtype=torch.float32, device=dst.device) - 1e4 * ((me - 1) % n)
    assert torch.equal(dst, expect), (dst[:4], expect[:4])
    tshmem.free(dst)
    print(f'PE {me}: the CUDA extension ring with the device API is right')


if __name__ == '__main__':
    import tshmem
    with tshmem.initialized():
        ring(tshmem)
