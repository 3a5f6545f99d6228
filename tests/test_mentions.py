"""Looser entity forms and the gazetteer (`onestep_gan.rdf2text.mentions`), on exact strings."""

from onestep_gan.rdf2text import mentions


def test_ordinal_days_next_to_a_month_become_cardinals_and_other_ordinals_stay():
    assert mentions.normalise_ordinal_days("born on 30th of March 1950") == "born on 30 March 1950"
    assert mentions.normalise_ordinal_days("born on March 30th, 1950") == "born on March 30, 1950"
    assert mentions.normalise_ordinal_days("lives on 23rd Street") == "lives on 23rd Street"
    assert mentions.normalise_ordinal_days("on 3rd Mar. 2001, 30th of Sept. and Jan 5th") == "on 3 Mar. 2001, 30 Sept. and Jan 5"
    # Words that start like a month are not months.
    text = "the 55th Mayor of Chicago, the 1st Marine Division, the 2nd Junior League and the 3rd Decade"
    assert mentions.normalise_ordinal_days(text) == text


def test_loose_forms_of_names_numbers_and_countries():
    # A surname is a name form (matched only capitalised), not a loose form.
    assert mentions.loose_forms("Alan Shepard") == [] and mentions.name_forms("Alan Shepard") == ["Shepard"]
    assert mentions.name_forms("New York City") == ["City"] and mentions.name_forms("Texas") == []
    assert mentions.loose_forms("Felipe VI of Spain") == ["Felipe VI"] and mentions.name_forms("Felipe VI of Spain") == []
    assert mentions.loose_forms("Airman (comicsCharacter)") == ["Airman", "Airmans"]
    assert mentions.loose_forms("1147.0") == ["1147", "1,147"]
    assert mentions.loose_forms("2.5") == ["2.50"]  # forms equal to the entity are left out
    assert mentions.loose_forms("United States")[:3] == ["American", "Americans", "United States of America"]


def test_replace_loose_forms_finds_demonyms_and_misspellings_and_keeps_found_entities():
    assert mentions.replace_loose_forms(
        ["The", "American", "actor", "."], {"ENT_1": "United States"}
    ) == ["The", "ENT_1", "actor", "."]
    assert mentions.replace_loose_forms(
        ["in", "Guadalaraja", ",", "ENT_2", "."], {"ENT_1": "Guadalajara", "ENT_2": "Mexico"}
    ) == ["in", "ENT_1", ",", "ENT_2", "."]
    # A typo in the first letter is not forgiven.
    assert mentions.replace_loose_forms(["Klaus", "Lohannis"], {"ENT_1": "Klaus Iohannis"}) == ["Klaus", "Lohannis"]
    # 3/4 of a long literal's content words, in order.
    assert mentions.replace_loose_forms(
        ["Ottoman", "army", "soldiers", "in", "the", "Battle", "of", "Baku", "."],
        {"ENT_1": "Ottoman Army soldiers killed in the Battle of Baku"},
    ) == ["ENT_1", "."]
    # A number is equal or another number: 1778.0 is no misspelling of 1773.0 (its loose forms still count).
    assert mentions.replace_loose_forms(["of", "1778.0", "."], {"ENT_1": "1773.0"}) == ["of", "1778.0", "."]
    assert mentions.replace_loose_forms(["of", "441093000.0", "km"], {"ENT_1": "441092000.0 (kilometres)"}) == [
        "of", "441093000.0", "km"]
    assert mentions.replace_loose_forms(["of", "1,773", "metres"], {"ENT_1": "1773.0"}) == ["of", "ENT_1", "metres"]
    # Name forms count only where the text writes them capitalised: "the city" does not name New York City.
    assert mentions.replace_loose_forms(["in", "the", "city", "."], {"ENT_1": "New York City"}) == ["in", "the", "city", "."]
    assert mentions.replace_loose_forms(["in", "a", "league"], {"ENT_1": "Premier League"}) == ["in", "a", "league"]
    assert mentions.replace_loose_forms(["shepard", "flew", "."], {"ENT_1": "Alan Shepard"}) == ["shepard", "flew", "."]
    assert mentions.replace_loose_forms(["Shepard", "flew", "."], {"ENT_1": "Alan Shepard"}) == ["ENT_1", "flew", "."]
    # A title's head is a loose form, any case ("the prime minister" for Prime_Minister_of_Romania); a
    # number may carry its unit glued on.
    assert mentions.replace_loose_forms(["the", "prime", "minister"], {"ENT_1": "Prime Minister of Romania"}) == [
        "the", "ENT_1"]
    assert mentions.replace_loose_forms(["is", "-3.3528m", "high"], {"ENT_1": "-3.3528"}) == ["is", "ENT_1", "high"]
    # An entity already found is not looked for again; one with no loose form stays missing.
    assert mentions.replace_loose_forms(["ENT_1", "is", "here"], {"ENT_1": "Texas"}) == ["ENT_1", "is", "here"]
    assert mentions.replace_loose_forms(["nothing", "here"], {"ENT_1": "Texas"}) == ["nothing", "here"]


def test_gazetteer_keeps_names_and_finds_those_outside_the_input():
    assert mentions.usable_gazetteer(
        ["Texas", "12.5", "1950-03-12", "Ab", "lowercase words", "Houston (city)"]
    ) == {"Texas", "Houston"}
    index = mentions.gazetteer_index(["Texas", "Wheeler, Texas", "Houston"])
    tokens = ["ENT_1", "lives", "in", "Houston", ",", "Texas", "."]
    assert mentions.gazetteer_mentions(tokens, index, ["Alan Bean"]) == ["Houston", "Texas"]
    # A name inside an input entity is no extra entity; lowercase words are no names.
    assert mentions.gazetteer_mentions(tokens, index, ["Alan Bean", "Wheeler, Texas"]) == ["Houston"]
    assert mentions.gazetteer_mentions(["in", "houston"], index, []) == []


def test_contains_is_a_contiguous_run():
    assert mentions.contains(("a", "b", "c"), ("b", "c"))
    assert not mentions.contains(("a", "b", "c"), ("a", "c"))


def test_loose_forms_and_name_forms_on_exact_cases():
    # An eight-letter name takes one edit only: two letters off is another word.
    assert mentions.replace_loose_forms(["in", "Colunbas", "."], {"ENT_1": "Columbus"}) == ["in", "Colunbas", "."]
    # A description ("capital of France") or a generic last word ("State") gives no short form that would
    # make any "the capital" or "State" a mention of the entity.
    assert mentions.loose_forms("capital of France") == []
    assert mentions.name_forms("Rio De Janeiro State") == []
    # The plural of a last word in -y after a vowel: "days", not "daies".
    assert mentions.loose_forms("Christmas day") == ["Christmas days"]
