import pytest

from quiho.store import open_store
from quiho.store.popper import import_quiho_popper


@pytest.fixture(scope="session")
def popper_store(tmp_path_factory, popper_csv):
    """A store with the paper's CloudLab data imported once per session."""
    path = tmp_path_factory.mktemp("popper") / "q.db"
    with open_store(path) as st:
        import_quiho_popper(st, popper_csv)
    st = open_store(path)
    yield st
    st.close()
