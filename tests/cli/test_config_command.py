"""`sky config`: the configuration a pool would be built from, validated, with exit codes."""

from __future__ import annotations

from cli_support import Sky, no_traceback, write

VALID = """
    [defaults]
    ttl = 120

    [providers.box]
    type = "local"
    isolated = true

    [pools.train]
    provider = "box"
    nodes = [1, 3]
    plugins = ["sklearn", { name = "mig", profile = "1g.10gb" }]
"""

BROKEN = """
    [pools.train]
    nodse = 2

    [pools.ok]
    nodes = 1
"""


def test_validate_accepts_a_valid_file_with_exit_code_0(sky: Sky) -> None:
    path = write(sky.root / "skyward.toml", VALID)
    done = sky("config", "validate")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"valid: {path} (pools: 1, providers: 1)"


def test_validate_names_the_file_the_key_and_the_fix_with_exit_code_1(sky: Sky) -> None:
    path = write(sky.root / "skyward.toml", BROKEN)
    done = sky("config", "validate")
    assert done.returncode == 1 and no_traceback(done)
    assert done.stderr.strip() == f"Error: {path} [pools.train]: unknown key 'nodse'; did you mean 'nodes'?"


def test_every_problem_is_reported_not_only_the_first(sky: Sky) -> None:
    write(sky.root / "skyward.toml", BROKEN + '[pools.third]\naccelerator = "A1000"\n')
    done = sky("config", "validate")
    assert done.returncode == 1
    assert [line.split("]: ")[0].rsplit("[", 1)[1] for line in done.stderr.splitlines()] == [
        "pools.train", "pools.third",
    ]


def test_a_file_that_is_not_toml_is_one_line_and_exit_code_1(sky: Sky) -> None:
    path = write(sky.root / "skyward.toml", "[pools.train\n")
    done = sky("config")
    assert done.returncode == 1 and no_traceback(done)
    assert done.stderr.startswith(f"Error: {path}: not valid TOML") and done.stderr.count("\n") == 1


def test_show_prints_each_pool_as_built_over_the_defaults_and_its_named_provider(sky: Sky) -> None:
    path = write(sky.root / "skyward.toml", VALID)
    shown = sky.json("config", "show")
    assert shown["valid"] is True and shown["files"]["project"] == str(path)
    assert shown["pools"]["train"] == {
        "ttl": 120, "provider": {"type": "local", "isolated": True}, "nodes": [1, 3],
        "plugins": ["sklearn", {"name": "mig", "profile": "1g.10gb"}],
    }
    assert shown["providers"]["box"] == {"file": str(path), "type": "local", "isolated": True}


def test_show_of_a_broken_file_lists_the_problems_and_exits_1(sky: Sky) -> None:
    write(sky.root / "skyward.toml", BROKEN)
    done = sky("config", "show", "--json")
    assert done.returncode == 1
    assert '"valid": false' in done.stdout and "unknown key 'nodse'" in done.stderr


def test_the_users_defaults_file_lies_under_the_project_file(sky: Sky) -> None:
    write(sky.home / "defaults.toml", '[defaults]\nttl = 60\nnodes = 2\n[providers.box]\ntype = "local"\n')
    write(sky.root / "skyward.toml", '[defaults]\nttl = 30\n[pools.train]\nprovider = "box"\n')
    shown = sky.json("config")
    assert shown["pools"]["train"] == {"ttl": 30, "nodes": 2, "provider": {"type": "local"}}
    assert shown["providers"]["box"]["file"] == str(sky.home / "defaults.toml")


def test_a_mistake_in_the_users_defaults_names_that_file(sky: Sky) -> None:
    defaults = write(sky.home / "defaults.toml", '[providers.box]\ntype = "local"\nisolatd = true\n')
    write(sky.root / "skyward.toml", '[pools.train]\nprovider = "box"\n')
    done = sky("config", "validate")
    assert done.returncode == 1
    assert done.stderr.startswith(f"Error: {defaults} [providers.box]: unknown key 'isolatd'")
    assert "did you mean 'isolated'?" in done.stderr


def test_path_names_the_project_file_and_the_users_defaults(sky: Sky) -> None:
    path = write(sky.root / "skyward.toml", "")
    nested = sky.root / "src" / "pkg"
    nested.mkdir(parents=True)
    assert sky.json("config", "path") == {
        "project": str(path), "user_defaults": str(sky.home / "defaults.toml"), "user_defaults_exists": False,
    }


def test_skyward_config_points_at_another_file(sky: Sky) -> None:
    other = write(sky.root / "elsewhere" / "team.toml", "[pools.x]\nnodes = 1\n")
    assert sky.json("config", "path", SKYWARD_CONFIG=str(other))["project"] == str(other)
    assert list(sky.json("config", SKYWARD_CONFIG=str(other))["pools"]) == ["x"]


def test_an_unknown_subcommand_is_a_usage_error_with_exit_code_2(sky: Sky) -> None:
    done = sky("config", "nope")
    assert done.returncode == 2 and "No such command 'nope'" in done.stderr
