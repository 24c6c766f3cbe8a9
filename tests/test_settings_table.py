"""The controller's option table (``rapier_app/controller/options.toml``, issue 15).

Every option is declared once there; :class:`Settings` (fields, defaults, docstring)
and ``ryuconf.OPTS`` (oslo.config) are generated from it.  These tests check that both
follow the table, that ``configs/rapier.conf`` names every option, and that a
malformed table is refused with a message naming the option and the key.
"""

import dataclasses
import os

import pytest

from rapier_app.controller.ryuconf import OPTS
from rapier_app.controller.settings import (OPTIONS, SECTIONS, OptionTableError, Settings,
                                            parse_option_table)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OPT_CLASS = {"str": "StrOpt", "float": "FloatOpt", "int": "IntOpt", "bool": "BoolOpt"}


def test_settings_fields_follow_the_table():
    fields = dataclasses.fields(Settings)
    assert [f.name for f in fields] == [o.name for o in OPTIONS]
    s = Settings()
    for o, f in zip(OPTIONS, fields):
        assert getattr(s, o.name) == o.default_value(), o.name
        assert f.type == (f"Optional[{o.type}]" if o.optional else o.type), o.name
        if o.default is not None:
            assert type(getattr(s, o.name)).__name__ == o.type, o.name
    assert s.validate() is s  # the table's defaults pass validation
    assert dataclasses.replace(s, seed=3).seed == 3 and Settings(seed=4).seed == 4


def test_oslo_opts_follow_the_table():
    assert [opt.name for opt in OPTS] == [o.name for o in OPTIONS]
    for o, opt in zip(OPTIONS, OPTS):
        assert type(opt).__name__ == OPT_CLASS[o.type], o.name
        assert opt.default == o.controller_default(), o.name
        if o.name != "state_db":  # the only option whose ryu-manager default differs
            assert opt.default == getattr(Settings(), o.name), o.name
        assert opt.help == o.help and opt.secret == o.oslo.get("secret", False), o.name
        for bound in ("min", "max"):
            assert getattr(opt.type, bound, None) == o.oslo.get(bound), (o.name, bound)
    secret = {opt.name for opt in OPTS if opt.secret}
    assert secret == {"rest_token", "agent_token"}


def test_table_sections_and_docstring():
    assert [name for name, _ in SECTIONS] == ["core", "durability", "security",
                                              "responsiveness", "discovery"]
    assert {o.section for o in OPTIONS} == {name for name, _ in SECTIONS}
    for o in OPTIONS:
        assert f"    {o.name} (" in Settings.__doc__, o.name


def test_state_db_is_on_for_ryu_manager_and_opt_in_in_process(monkeypatch):
    """The controller's oslo default is ``$RAPIER_STATE_DB`` or the documented file;
    an in-process ``Settings()`` keeps ``:memory:`` whatever the environment says."""
    (o,) = [o for o in OPTIONS if o.name == "state_db"]
    monkeypatch.setenv("RAPIER_STATE_DB", "/tmp/x.sqlite3")
    assert o.controller_default() == "/tmp/x.sqlite3"
    assert Settings().state_db == ":memory:"
    monkeypatch.delenv("RAPIER_STATE_DB")
    assert o.controller_default() == "rapier-state/controller.sqlite3"
    assert Settings().state_db == ":memory:"
    assert Settings(state_db="/tmp/y.sqlite3").state_db == "/tmp/y.sqlite3"


def test_shipped_config_names_every_option():
    with open(os.path.join(ROOT, "configs", "rapier.conf")) as fh:
        keys = {line.lstrip("#").split("=")[0].strip() for line in fh
                if "=" in line and not line.startswith("# ")}
    missing = {o.name for o in OPTIONS if o.name not in keys}
    assert not missing


def table(option_lines: str) -> str:
    """A one-section table holding one option made of ``option_lines``."""
    return ('[[section]]\nname = "core"\ntitle = "Core"\n\n[[section.option]]\n'
            'name = "x"\nhelp = "an option"\n' + option_lines)


def test_a_small_table_parses():
    sections, options = parse_option_table(table('type = "float"\ndefault = 2\nmin = 0\n'))
    assert sections == (("core", "Core"),)
    (o,) = options
    assert (o.name, o.type, o.default, o.doc, dict(o.oslo)) == ("x", "float", 2.0,
                                                                "an option", {"min": 0.0})
    assert type(o.default) is float
    _, (o,) = parse_option_table(table('type = "int"\noptional = true\n'))
    assert o.default is None and o.dataclass_field()[1] == "Optional[int]"


@pytest.mark.parametrize("lines,message", [
    ('type = "flaot"\ndefault = 1.0\n',
     r"option 'x': type must be one of bool, float, int, str, got 'flaot'"),
    ('type = "int"\ndefault = "3"\n', r"option 'x': default must be a int, got '3'"),
    ('type = "int"\n', r"option 'x': default is missing"),
    ('type = "str"\ndefault = ""\nmin = 1\n', r"min applies to int and float options"),
    ('type = "str"\ndefautl = ""\n', r"unknown key\(s\) defautl"),
    ('type = "str"\ndefault = ""\ncontroller_default_factory = "nope"\n',
     r"controller_default_factory must be one of"),
    ('type = "str"\ncontroller_default_factory = "default_state_db"\n',
     r"default is missing"),
    ('type = "bool"\ndefault = 1\n', r"default must be a bool, got 1"),
])
def test_a_bad_table_is_refused(lines, message):
    with pytest.raises(OptionTableError, match=message):
        parse_option_table(table(lines), "t.toml")


def test_repeated_names_and_bad_toml_are_refused():
    twice = table('type = "int"\ndefault = 1\n')
    twice += '[[section.option]]\nname = "x"\ntype = "int"\ndefault = 2\nhelp = "again"\n'
    with pytest.raises(OptionTableError, match="option 'x': name must be a new"):
        parse_option_table(twice)
    with pytest.raises(OptionTableError, match="^options.toml: "):
        parse_option_table("[[section]\n")
    with pytest.raises(OptionTableError, match="expected only"):
        parse_option_table('name = "x"\n')
