"""The callback hpc.slurm_gres.gc_freeze in a real ansible-playbook: the workers forked for each task, in every
play, find the control process's heap frozen (and none without the callback); the run's results are the same.
(tests/integration/test_verify_playbook.py runs verify-gres.yml with it.)"""
import pytest

from emulated_node import run_playbook_json

# test-only: reports, from inside the worker that templates the task, how many objects are frozen
LOOKUP = '''
import gc
from ansible.plugins.lookup import LookupBase


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        return [gc.get_freeze_count()]
'''

PLAYBOOK = '''
- name: First play
  hosts: all
  gather_facts: false
  tasks:
    - name: Count
      ansible.builtin.debug:
        msg: "{{ lookup('freeze_count') }}"
- name: Second play
  hosts: all
  gather_facts: false
  tasks:
    - name: Count again
      ansible.builtin.debug:
        msg: "{{ lookup('freeze_count') }}"
      changed_when: true
      notify: Count in a handler
  handlers:
    - name: Count in a handler
      ansible.builtin.debug:
        msg: "{{ lookup('freeze_count') }}"
'''

pytestmark = pytest.mark.ansible_core


def run(tmp_path, callbacks):
    """{task name: {host: the freeze count its worker saw}}; ``callbacks``: ANSIBLE_CALLBACKS_ENABLED, or None."""
    lookups = tmp_path / "lookup_plugins"
    lookups.mkdir(exist_ok=True)
    (lookups / "freeze_count.py").write_text(LOOKUP)
    playbook = tmp_path / "count.yml"
    playbook.write_text(PLAYBOOK)
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n    n01: {ansible_connection: local}\n    n02: {ansible_connection: local}\n")
    rc, tasks, out = run_playbook_json(str(inventory), str(playbook), env={
        "ANSIBLE_LOOKUP_PLUGINS": str(lookups), "ANSIBLE_CALLBACKS_ENABLED": callbacks})
    assert rc == 0, out
    return {task: {host: int(result["msg"]) for host, result in hosts.items()} for task, hosts in tasks.items()}


def test_every_worker_finds_the_heap_frozen(tmp_path):
    counts = run(tmp_path, "hpc.slurm_gres.gc_freeze")
    assert sorted(counts) == ["Count", "Count again", "Count in a handler"]
    for task, hosts in counts.items():
        assert sorted(hosts) == ["n01", "n02"], task
        # the inventory, the plays and ansible-core itself: tens of thousands of objects
        assert all(count > 10000 for count in hosts.values()), (task, hosts)


def test_without_the_callback_nothing_is_frozen(tmp_path):
    counts = run(tmp_path, None)
    assert counts and all(count == 0 for hosts in counts.values() for count in hosts.values()), counts
