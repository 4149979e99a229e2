"""web/forms.py: a posted form decoded into the record a service takes (nested names, lists,
numbers, checkboxes), and a refusal mapped to the form field that carried the value."""

from __future__ import annotations

from typing import Annotated

import msgspec
import pytest

from dutyline.api import errors
from dutyline.dispatch.schemas import RuleSpec
from dutyline.platform.member.schemas import NewMember
from dutyline.platform.team.schemas import TeamChanges
from dutyline.web import forms

HEX = "6321aad26c12104586a88916"


class Window(msgspec.Struct, kw_only=True):
    minutes: Annotated[int, msgspec.Meta(ge=1, le=1440)] = 60
    quiet: bool = False


class Settings(msgspec.Struct, kw_only=True):
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=10)]
    limit: Annotated[int, msgspec.Meta(ge=0, le=5)] | None = None
    enabled: bool = True
    tags: list[str] = []
    window: Window | None = None
    im: dict[str, str] = {}


def refused(form: dict[str, list[str]], record: type[msgspec.Struct],
            **options: object) -> dict[str, object]:
    with pytest.raises(errors.InvalidParameter) as caught:
        forms.decode(form, record, **options)  # type: ignore[arg-type]
    return caught.value.fields


def test_nested_names_fill_nested_records() -> None:
    rule = forms.decode({
        "channel_id": ["7"], "template_id": [HEX], "rule_name": ["Night"],
        "layers[1].target.team_ids": ["4"], "layers[1].force_escalate": ["on"],
        "layers[0].target.person_ids": ["1", "2"], "layers[0].max_times": ["3"],
        "layers[0].target.by.critical": ["email", "sms"], "csrf_token": ["t"],
    }, RuleSpec)
    assert rule.channel_id == 7 and rule.rule_name == "Night"
    first, second = rule.layers
    assert first.target.person_ids == [1, 2] and first.max_times == 3
    assert first.target.by is not None and first.target.by.critical == ["email", "sms"]
    assert second.target.team_ids == [4] and second.force_escalate is True
    assert second.max_times == 0  # the record's default


def test_lists_numbers_checkboxes_and_mappings() -> None:
    got = forms.decode({"name": ["Edge"], "limit": ["3"], "tags": ["a", "b", ""],
                        "window.minutes": ["15"], "window.quiet": ["false", "on"],
                        "im.slack": ["U1"], "im.zoom": ["z"]}, Settings)
    assert got == Settings(name="Edge", limit=3, tags=["a", "b"], im={"slack": "U1", "zoom": "z"},
                           window=Window(minutes=15, quiet=True))
    # An empty number is no value: None for an optional one, else the default.
    got = forms.decode({"name": ["Edge"], "limit": [""], "window.minutes": [""]}, Settings)
    assert got.limit is None and got.window == Window()
    # A shown checkbox the browser sent nothing for is unticked; a shown list is empty.
    got = forms.decode({"name": ["Edge"]}, Settings, shown=("enabled", "tags"))
    assert got.enabled is False and got.tags == []
    assert forms.decode({"name": ["Edge"]}, Settings).enabled is True


def test_text_keeps_what_was_typed_with_lf_line_breaks() -> None:
    team = forms.decode({"team_name": [" SRE "], "description": ["one\r\ntwo"]}, TeamChanges)
    assert team.team_name == " SRE " and team.description == "one\ntwo"


def test_what_the_page_gives_overrides_the_form() -> None:
    team = forms.decode({"team_name": ["SRE"], "team_id": ["99"]}, TeamChanges,
                        given={"team_id": 5})
    assert team.team_id == 5


def test_a_refusal_names_the_form_field_that_carried_it() -> None:
    assert refused({"team_name": ["x" * 40]}, TeamChanges) == {
        "field": "team_name", "reason": "must be at most 39 characters"}
    assert refused({}, TeamChanges) == {"field": "team_name", "reason": "is required"}
    # A list posted under one name: its field, not the element's index.
    assert refused({"team_name": ["SRE"], "person_ids": ["1", "x"]}, TeamChanges) == {
        "field": "person_ids", "reason": "must be a whole number"}
    # A nested name is kept whole.
    form = {"channel_id": ["7"], "template_id": [HEX], "rule_name": ["Night"],
            "layers[0].target.person_ids": ["1"], "layers[0].notify_step": ["500"]}
    assert refused(form, RuleSpec) == {"field": "layers[0].notify_step",
                                       "reason": "must be at most 120.0"}
    # A field the form names otherwise is refused under the form's name.
    assert refused({"member_name": ["Ann"], "role_id": ["abc"]}, NewMember,
                   names={"role_ids": "role_id"}) == {
        "field": "role_id", "reason": "must be a whole number"}
    assert refused({"name": ["Edge"], "window.minutes": ["0"]}, Settings) == {
        "field": "window.minutes", "reason": "must be at least 1"}


def test_a_value_no_database_can_store_is_refused() -> None:
    assert refused({"team_name": ["S\x00RE"]}, TeamChanges) == {
        "field": "team_name", "reason": "must not contain NUL characters or unpaired "
                                        "surrogates"}


def test_a_services_refusal_is_mapped_to_the_form() -> None:
    form = {"member_name": ["Ann"], "email": ["a@b.example"], "role_id": ["1"]}
    batch = errors.invalid("members[0].email", "already belongs to a member")
    mapped = forms.on_form(batch, form=form, prefix=("members[0].", "members."))
    assert mapped.fields == {"field": "email", "reason": "already belongs to a member"}
    whole = forms.on_form(errors.invalid("members.email", "already belongs to a member"),
                          form=form, prefix=("members[0].", "members."))
    assert whole.fields["field"] == "email"
    roles = forms.on_form(errors.invalid("members[0].role_ids[0]", "Expected `int` >= 1"),
                          form=form, names={"role_ids": "role_id"}, prefix="members[0].")
    assert roles.fields == {"field": "role_id", "reason": "must be at least 1"}
    other = errors.AccessDenied()
    assert forms.on_form(other, form=form) is other


def test_plain_words() -> None:
    assert forms.plain("Expected `str` of length >= 3") == "must be at least 3 characters"
    assert forms.plain("Expected `array` of length <= 100") == "choose at most 100"
    assert forms.plain("Expected `array` of length >= 1") == "choose at least one"
    assert forms.plain("Invalid enum value 'Bad'") == "is not one of the choices"
    assert forms.plain("already exists") == "already exists"


def test_a_filter_form_leaves_out_what_its_record_refuses() -> None:
    got = forms.decode_known({"name": ["Edge"], "limit": ["9"], "tags": ["a"]}, Settings)
    assert got == Settings(name="Edge", tags=["a"])
    got = forms.decode_known({"name": ["Edge"], "limit": ["x"], "window.minutes": ["0"]},
                             Settings)
    assert got == Settings(name="Edge")
    # A value the record needs and refuses is still refused.
    with pytest.raises(errors.InvalidParameter) as caught:
        forms.decode_known({"name": ["x" * 11]}, Settings)
    assert caught.value.fields["field"] == "name"
