"""The compose runtime's failure messages name the failing service (no Docker needed)."""

from types import SimpleNamespace

from memmatrix.runtimes.compose import ComposeRuntime


def test_a_failing_backing_service_is_named_not_blamed_on_the_adapter():
    rt = ComposeRuntime.__new__(ComposeRuntime)
    rt.compose = SimpleNamespace(project="memmatrix-letta-ab12cd")
    assert rt._service_of("memmatrix-letta-ab12cd-postgres-1") == "postgres"
    assert rt._service_of("memmatrix-letta-ab12cd-adapter-1") == "adapter"
    assert rt._service_of("memmatrix-letta-ab12cd_letta_2") == "letta"
    assert rt._service_of("someone-else-db-1") == "adapter"  # not ours: the adapter's log is the best lead
