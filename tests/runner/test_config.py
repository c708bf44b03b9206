"""Configuration: [tool.perfgate] / perfgate.toml, errors that name the key and the file."""

from __future__ import annotations

import pytest

from runner import config, policy_source
from runner.errors import ConfigError


def test_defaults_without_any_file(tmp_path):
    cfg, source = config.load(tmp_path)
    assert source is None and cfg.threshold == 0.02 and cfg.benchmarks == "benchmarks"


def test_pyproject_table(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.perfgate]\nthreshold = 0.05\nbenchmarks = "perf"\nmax_time = 60\n')
    cfg, source = config.load(tmp_path)
    assert (cfg.threshold, cfg.benchmarks, cfg.max_time) == (0.05, "perf", 60.0)
    assert source.endswith("pyproject.toml")


def test_perfgate_toml_wins(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.perfgate]\nthreshold = 0.05\n")
    (tmp_path / "perfgate.toml").write_text("threshold = 0.01\n")
    assert config.load(tmp_path)[0].threshold == 0.01


def test_from_texts_is_the_rule_of_which_file_and_table_hold_the_config():
    both = {"perfgate.toml": "threshold = 0.01\n", "pyproject.toml": "[tool.perfgate]\nthreshold = 0.05\n"}
    assert config.from_texts(both, "o/r@main")[0].threshold == 0.01
    assert config.from_texts(both, "o/r@main")[1] == "o/r@main/perfgate.toml"
    assert config.from_texts({"pyproject.toml": "[tool.perfgate]\nthreshold = 0.05\n"})[0].threshold == 0.05
    assert config.from_texts({"perfgate.toml": None, "pyproject.toml": '[project]\nname = "x"\n'}) == (config.Config(), None)
    with pytest.raises(ConfigError, match=r"pyproject.toml: \[tool.perfgate\] must be a table"):
        config.from_texts({"pyproject.toml": "[tool]\nperfgate = 3\n"})


@pytest.mark.parametrize("text,needle", [
    ("treshold = 0.05\n", "unknown key 'treshold'"),
    ('threshold = "2%"\n', "key 'threshold' must be a number"),
    ("cold_cache = 1\n", "key 'cold_cache' must be a bool"),
    ('cold_cache = "yes"\n', 'cold_cache must be true, false or "auto"'),
    ("min_rounds = true\n", "key 'min_rounds'"),
    ("threshold = 2\n", "threshold must be a fraction"),
    ('device = "tpu"\n', "device must be one of"),
    ("min_rounds = 1\n", "min_rounds must be at least 2"),
    ("threshold = \n", "not valid TOML"),
    ('lock_clocks = "yes"\n', "key 'lock_clocks' must be a bool"),
    ("lock_clocks_mhz = -5\n", "lock_clocks_mhz must be >= 0"),
])
def test_errors_name_key_and_file(tmp_path, text, needle):
    (tmp_path / "perfgate.toml").write_text(text)
    with pytest.raises(ConfigError) as err:
        config.load(tmp_path)
    assert needle in str(err.value)
    assert "perfgate.toml" in str(err.value)


def test_cold_cache_is_the_conventions_own_unless_the_file_or_the_command_line_says():
    # "auto": a call handed to triton.testing.do_bench is timed cold, as do_bench times it
    assert config.Config().cold_cache == "auto" and config.Config().timer_cold_cache() is None
    assert config.parse_table({"cold_cache": "auto"}, "perfgate.toml").timer_cold_cache() is None
    assert config.parse_table({"cold_cache": False}, "perfgate.toml").timer_cold_cache() is False
    assert config.Config().override(cold_cache=True).timer_cold_cache() is True


def test_command_line_overrides_and_is_checked():
    cfg = config.Config().override(threshold=0.1, device=None)
    assert cfg.threshold == 0.1 and cfg.device == "auto"
    with pytest.raises(ConfigError, match="the command line"):
        config.Config().override(min_rounds=20, max_rounds=10)


def test_a_schedule_that_can_never_reach_a_verdict_is_refused():
    with pytest.raises(config.ConfigError, match=r"max_rounds \(16\) must be at least min_process_pairs × pair_rounds"):
        config.parse_table({"max_rounds": 16, "min_rounds": 8, "min_process_pairs": 3}, "perfgate.toml")
    assert config.parse_table({"max_rounds": 16, "min_rounds": 8, "min_process_pairs": 3, "pair_rounds": 4},
                              "perfgate.toml").max_rounds == 16


def test_runner_groups_and_the_regression_webhook_are_read_in_the_files_order():
    from runner.config import from_texts

    text = ('regression_webhook = "https://hooks.slack.com/services/T/B/x"\n'
            '[runners.h100]\nlabels = ["self-hosted", "h100"]\n[runners.mi300x]\nlabels = ["self-hosted", "mi300x"]\n')
    cfg, _ = from_texts({"perfgate.toml": text})
    assert cfg.runners == (("h100", ("self-hosted", "h100")), ("mi300x", ("self-hosted", "mi300x")))
    assert cfg.regression_webhook == "https://hooks.slack.com/services/T/B/x"
    cfg, _ = from_texts({"pyproject.toml": "[tool.perfgate.runners.a100]\nlabels = ['gpu-a100']\n"})
    assert cfg.runners == (("a100", ("gpu-a100",)),)
    assert from_texts({})[0].runners == () and from_texts({})[0].regression_webhook == ""


@pytest.mark.parametrize("text, says", [
    ("runners = 3", "runners must be tables"),
    ("[runners.h100]\nlabels = []", "labels must be a list"),
    ("[runners.h100]\nlabels = ['a,b']", "labels must be a list"),
    ("[runners.h100]\nlabels = ['gpu']\nsize = 2", "takes one key, labels"),
    ('[runners."-x"]\nlabels = ["gpu"]', "runner group name"),
    ("\n".join(f"[runners.g{i}]\nlabels = ['gpu']" for i in range(9)), "at most 8 runner groups"),
    ('regression_webhook = "http://hooks.example.com/x"', "regression_webhook must be an https:// URL"),
])
def test_bad_runner_groups_and_webhooks_are_named(text, says):
    from runner.config import from_texts

    with pytest.raises(ConfigError, match=says):
        from_texts({"perfgate.toml": text})


#: A value of each deprecated internal key, valid and other than its constant.
INTERNAL_VALUES = {"process_noise": 0.01, "min_process_pairs": 3, "pair_rounds": 4,
                   "max_rounds": 128, "lock_clocks_mhz": 1410,
                   "cuda_alloc_conf": "expandable_segments:True"}


@pytest.mark.parametrize("key", sorted(INTERNAL_VALUES))
def test_each_internal_key_is_honoured_with_a_deprecation_message(tmp_path, key):
    value = INTERNAL_VALUES[key]
    text = f"[tool.perfgate]\n{key} = {value!r}\nthreshold = 0.03\n"
    (tmp_path / "pyproject.toml").write_text(text)
    cfg, source = config.load(tmp_path)
    assert getattr(cfg, key) == value and cfg.threshold == 0.03  # this release still uses it
    assert list(cfg.deprecated) == [key]
    message = cfg.deprecated[key]
    assert message.startswith(f"`{key}` in {source} [tool.perfgate] is an internal of ")
    assert "is deprecated: this release still honours its value" in message
    assert "the next ignores it; remove it" in message
    assert config.Config().override(**{key: value}).deprecated == {}  # set in code, not by a file


def test_a_config_without_internal_keys_gives_no_deprecation(tmp_path):
    (tmp_path / "perfgate.toml").write_text('threshold = 0.03\nmin_rounds = 8\nallocator = "steady"'
                                            "\nlock_clocks = true\n[selection]\nenabled = true\n")
    assert config.load(tmp_path)[0].deprecated == {}
    assert config.load(tmp_path / "nothing")[0].deprecated == {}
    assert config.Config().deprecated == {}


def test_the_messages_come_in_one_order_and_name_what_replaces_a_key():
    table = {"cuda_alloc_conf": "x", "process_noise": 0.01, "lock_clocks_mhz": 1}
    cfg = config.parse_table(table, "perfgate.toml")
    assert list(cfg.deprecated) == ["process_noise", "lock_clocks_mhz", "cuda_alloc_conf"]
    statistics = "an internal of the statistics (runner.stats.PROCESS_NOISE)"
    assert statistics in cfg.deprecated["process_noise"]
    assert "locks the GPU's default application clock" in cfg.deprecated["lock_clocks_mhz"]
    assert "export PYTORCH_CUDA_ALLOC_CONF on the runner" in cfg.deprecated["cuda_alloc_conf"]
    assert cfg == config.Config(cuda_alloc_conf="x", process_noise=0.01, lock_clocks_mhz=1)


def test_the_internal_keys_default_to_their_constants():
    from runner import stats
    from runner.pipeline.machine.clock_plan import LOCK_SM_MHZ
    from runner.pipeline.machine.conditions import CUDA_ALLOC_CONF

    cfg = config.Config()
    assert (cfg.process_noise, cfg.min_process_pairs, cfg.pair_rounds, cfg.max_rounds) == (
        stats.PROCESS_NOISE, stats.MIN_PROCESS_PAIRS, stats.PAIR_ROUNDS, stats.MAX_ROUNDS)
    assert (cfg.lock_clocks_mhz, cfg.cuda_alloc_conf) == (LOCK_SM_MHZ, CUDA_ALLOC_CONF)
    assert set(config.INTERNALS) < set(config.KEYS) and "deprecated" not in config.KEYS


def test_an_unknown_key_lists_the_keys_but_not_the_internals():
    with pytest.raises(ConfigError) as err:
        config.parse_table({"treshold": 0.02}, "perfgate.toml")
    listed = str(err.value).split("known keys: ", 1)[1]
    assert "threshold" in listed and not any(key in listed for key in config.INTERNALS)
    with pytest.raises(ConfigError, match="unknown key 'deprecated'"):
        config.parse_table({"deprecated": {}}, "perfgate.toml")


def test_a_working_tree_configuration_the_compare_does_not_read_is_named(tmp_path):
    base, tree = tmp_path / "base", tmp_path / "tree"
    base.mkdir(), tree.mkdir()
    (base / "perfgate.toml").write_text("threshold = 0.02\n")
    (tree / "perfgate.toml").write_text("threshold = 0.02\n")
    assert policy_source.working_tree_notes(tree, base) == []
    (tree / "perfgate.toml").write_text("threshold = 0.05\nmax_time = 60\n")
    [note] = policy_source.working_tree_notes(tree, base)
    assert "sets max_time, threshold differently and is not read" in note
    # --config: nothing ignored
    assert policy_source.working_tree_notes(tree, base, given=True) == []
    (tree / "perfgate.toml").write_text("threshold = [\n")
    assert "is not valid TOML and is not read" in policy_source.working_tree_notes(tree, base)[0]
