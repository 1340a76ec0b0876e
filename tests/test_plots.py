"""The cost plots: drawn from the committed results, the same bytes every time, and docs/plots/ up to date."""

from conftest import ROOT

from memmatrix.cli import main


def test_the_committed_plots_are_what_the_committed_results_draw(tmp_path, capsys):
    assert main(["plots", str(ROOT / "results"), "--out", str(tmp_path)]) == 0
    drawn = sorted(p.name for p in tmp_path.iterdir())
    assert drawn == ["accuracy-chars.svg", "lag-cdf.svg", "size-growth.svg"]
    for name in drawn:
        assert (tmp_path / name).read_bytes() == (ROOT / "docs/plots" / name).read_bytes(), \
            f"docs/plots/{name} is stale: run memmatrix plots"


def test_each_plot_shows_the_systems_its_results_hold(tmp_path):
    import json
    main(["plots", str(ROOT / "results/door"), "--out", str(tmp_path)])
    svg = (tmp_path / "accuracy-chars.svg").read_text()
    systems = {json.loads(p.read_text())["stamp"]["system"]["name"]
               for p in (ROOT / "results/door").glob("*/*/embedded/result.json")}
    assert systems and all(f"{name}: " in svg for name in systems)
    assert not (tmp_path / "size-growth.svg").exists()  # no deletion result under results/door: nothing drawn


def test_no_result_with_plot_data_draws_nothing_and_says_so(tmp_path, capsys):
    assert main(["plots", str(tmp_path), "--out", str(tmp_path / "out")]) == 0
    assert "no result" in capsys.readouterr().err
