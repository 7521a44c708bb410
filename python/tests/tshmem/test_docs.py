"""The README's Python programs are python/examples/hello.py and ep_moe_layer.py, as written (run where a GPU is present)."""
import os
import re

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..')


def test_readme_program_is_the_example():
    with open(os.path.join(ROOT, 'README.md')) as f:
        readme = f.read()
    section = readme[readme.index('## From Python'):]
    program = re.search(r'```python\n(.*?)```', section, re.S).group(1)
    with open(os.path.join(ROOT, 'python', 'examples', 'hello.py')) as f:
        example = f.read()
    body = example[example.index('"""', 3) + 3:].lstrip('\n')  # after the module docstring
    assert program == body
    assert 'mpirun -np 2 python hello.py' in section and 'torchrun --nproc-per-node 2 hello.py' in section


def test_readme_expert_parallelism_is_the_example():
    with open(os.path.join(ROOT, 'README.md')) as f:
        readme = f.read()
    section = readme[readme.index('## Expert parallelism'):]
    section = section[:section.index('\n## ')]
    program = re.search(r'```python\n(.*?)```', section, re.S).group(1)
    with open(os.path.join(ROOT, 'python', 'examples', 'ep_moe_layer.py')) as f:
        example = f.read()
    assert program == example[example.index('"""', 3) + 3:].lstrip('\n')
    assert 'mpirun -np 2 python ep_moe_layer.py' in section
