"""Gold mentions from the enriched WebNLG (`enriched.py`), on a hand-written two-entry corpus."""

import pytest

from onestep_gan.rdf2text import enriched
from onestep_gan.rdf2text.preprocessor import TextPreprocessor
from onestep_gan.rdf2text.webnlg import Triple, WebNLGEntry

ENTRY = """<?xml version="1.0" ?>
<benchmark>
  <entries>
    <entry category="Astronaut" eid="Id1" size="2">
      <modifiedtripleset>
        <mtriple>Elliot_See | birthPlace | Dallas</mtriple>
        <mtriple>Elliot_See | nationality | United_States</mtriple>
      </modifiedtripleset>
      <lex comment="good" lid="Id1">
        <references>
          <reference entity="Elliot_See" number="1" tag="AGENT-1" type="name">Eliot See</reference>
          <reference entity="Dallas" number="2" tag="PATIENT-1" type="name">Dallas</reference>
          <reference entity="Elliot_See" number="3" tag="AGENT-1" type="pronoun">He</reference>
          <reference entity="United_States" number="4" tag="PATIENT-2" type="description">the country</reference>
        </references>
        <text>Eliot See was born in  Dallas.
          He was a national of the country.</text>
        <template>AGENT-1 was born in PATIENT-1 . AGENT-1 was a national of PATIENT-2 .</template>
      </lex>
      <lex comment="good" lid="Id2">
        <references>
          <reference entity="United_States" number="1" tag="PATIENT-2" type="name">U.S. . Elliot See was born in Dallas</reference>
          <reference entity="Dallas" number="2" tag="PATIENT-1" type="name">Dallas , in the state of Texas in the south</reference>
          <reference entity="" number="3" tag="PATIENT-1" type="name">Dallas</reference>
        </references>
        <text>Elliot See was a U.S. national. Elliot See was born in Dallas, in the state of Texas in the south.</text>
      </lex>
    </entry>
  </entries>
</benchmark>
"""


def write_train_file(folder, size_folder, xml):
    """An enriched corpus folder whose train split holds one file, `size_folder/Astronaut.xml`."""
    (folder / "train" / size_folder).mkdir(parents=True)
    (folder / "train" / size_folder / "Astronaut.xml").write_text(xml, encoding="utf-8")
    return folder


@pytest.fixture
def enriched_dir(tmp_path):
    return write_train_file(tmp_path / "enriched", "2triples", ENTRY)


def test_load_mentions_keeps_names_and_descriptions_and_drops_pronouns_and_misalignments(enriched_dir):
    mentions = enriched.load_mentions("train", enriched_dir)
    assert mentions == {
        "Eliot See was born in Dallas. He was a national of the country.": (
            ("Elliot_See", "Eliot See"), ("Dallas", "Dallas"), ("United_States", "the country"),
        ),
        # A sentence end inside, 6 tokens more than "Dallas", no entity: all left out.
        "Elliot See was a U.S. national. Elliot See was born in Dallas, in the state of Texas in the south.": (),
    }


def test_plausible_mentions():
    assert enriched.is_plausible_mention("Ben_Urich", "the comic character Ben Urich")  # 3 tokens more
    assert not enriched.is_plausible_mention("Ben_Urich", "the comic book character Ben Urich")  # 4
    assert enriched.is_plausible_mention("Carroll_County,_Maryland", "Carrol County , Maryland")
    assert not enriched.is_plausible_mention("President_of_the_United_States", "Paul Ryan . The leader is President")
    assert not enriched.is_plausible_mention("Dallas", "Dallas , in the state of Texas")
    assert not enriched.is_plausible_mention(None, "Dallas")
    assert not enriched.is_plausible_mention("Dallas", "  ")


def test_with_mentions_gives_each_reference_text_its_own(enriched_dir):
    mentions = enriched.load_mentions("train", enriched_dir)
    triples = (Triple("Elliot_See", "birthPlace", "Dallas"), Triple("Elliot_See", "nationality", "United_States"))
    texts = ("Elliot See was a U.S. national. Elliot See was born in Dallas, in the state of Texas in the south.",
             "A text the corpus does not hold.",
             "Eliot See was born in Dallas. He was a national of the country.")
    [entry] = enriched.with_mentions([WebNLGEntry("train/Id1", "Astronaut", 2, triples, texts)], mentions)
    assert entry.mentions == (
        (), (), (("Elliot_See", "Eliot See"), ("Dallas", "Dallas"), ("United_States", "the country")))
    # The preprocessor delexicalises each training text with its own mentions.
    preprocessor = TextPreprocessor.build([entry], max_source_length=32, max_target_length=32)
    examples = preprocessor.encode_entries([entry], for_training=True)
    targets = [preprocessor.vocabulary.decode(example.target_ids) for example in examples]
    assert targets[2] == ["ENT_1", "was", "born", "in", "ENT_2", ".", "He", "was", "a", "national", "of", "ENT_3", "."]
    assert targets[0][:5] == ["ENT_1", "was", "a", "ENT_3", "national"]  # the matcher's own alias


def test_errors_name_what_is_missing_or_malformed(tmp_path, enriched_dir, monkeypatch):
    monkeypatch.delenv(enriched.ENRICHED_DIR_VARIABLE, raising=False)
    with pytest.raises(ValueError, match="pass --enriched-dir, set WEBNLG_ENRICHED_DIR, or train without them"):
        enriched.load_mentions("train")
    monkeypatch.setenv(enriched.ENRICHED_DIR_VARIABLE, str(enriched_dir))
    assert len(enriched.load_mentions("train")) == 2
    with pytest.raises(ValueError, match=r"enriched/dev: expected the enriched WebNLG dev files as NtriplesN/\*\.xml"):
        enriched.load_mentions("dev", enriched_dir)
    bad = enriched_dir / "train" / "2triples" / "Bad.xml"
    bad.write_text("<benchmark>\n<entries>\n<entry>\n</benchmark>\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"Bad\.xml: line 4: not well-formed XML"):
        enriched.load_mentions("train", enriched_dir)
    bad.unlink()
    (enriched_dir / "train" / "2triples" / "Odd.xml").mkdir()  # a folder where a file was expected
    with pytest.raises(ValueError, match=r"Odd\.xml: cannot be read \(IsADirectoryError"):
        enriched.load_mentions("train", enriched_dir)


def test_the_mle_job_trains_on_references_delexicalised_with_the_mentions(tmp_path, monkeypatch):
    from onestep_gan.rdf2text import mle
    from onestep_gan.rdf2text.config import MLEConfig
    from tests.conftest import fixture_2017_dir

    lex = ('<lex><references><reference entity="Abilene,_Texas" tag="PATIENT-1" type="name">Abilene</reference>'
           "</references><text>Abilene Regional Airport serves Abilene, Texas.</text></lex>")
    for split in ("train", "dev"):
        (tmp_path / "enriched" / split / "1triples").mkdir(parents=True)
        (tmp_path / "enriched" / split / "1triples" / "A.xml").write_text(
            f"<benchmark><entries><entry>{lex}</entry></entries></benchmark>", encoding="utf-8")
    seen = {}

    def stop_after_data(train_entries, *args, **kwargs):
        seen["train"] = train_entries
        raise RuntimeError("stopped after reading the data")

    monkeypatch.setattr(mle.TextPreprocessor, "build", stop_after_data)
    config = MLEConfig.quick()
    for gold_mentions in (False, True):
        config.gold_mentions = gold_mentions
        with pytest.raises(RuntimeError, match="stopped after reading the data"):
            mle.train_and_evaluate(config, fixture_2017_dir(), tmp_path / "run", tmp_path / "enriched")
        [abilene] = [entry for entry in seen["train"] if entry.texts and entry.texts[0].startswith("Abilene Regional")]
        assert abilene.mentions == (((("Abilene,_Texas", "Abilene"),), ()) if gold_mentions else ())


def test_the_adversarial_stage_delexicalises_train_and_dev_as_its_mle_run_did(tmp_path, monkeypatch):
    import pathlib
    import types

    from onestep_gan.rdf2text import adversarial, runs
    from onestep_gan.rdf2text.config import AdversarialConfig, MLEConfig

    calls = []

    def record(split, *args, **kwargs):
        calls.append((split, kwargs.get("gold_mentions", False), kwargs.get("enriched_dir")))
        if split == "test":
            raise RuntimeError("stopped after reading the data")
        return []

    def write(path):
        pathlib.Path(path).write_text("{}")

    (tmp_path / "mle").mkdir()
    (tmp_path / "mle" / runs.SUMMARY_FILE).write_text("a finished MLE run\n")
    for gold_mentions in (False, True):
        mle_config = MLEConfig(gold_mentions=gold_mentions)
        monkeypatch.setattr(runs, "load_run", lambda run_dir, config=mle_config: (
            types.SimpleNamespace(max_target_length=99),
            types.SimpleNamespace(vocabulary=types.SimpleNamespace(save=write)), config))
        monkeypatch.setattr(runs, "load_split", record)
        calls.clear()
        with pytest.raises(RuntimeError, match="stopped after reading the data"):
            adversarial.train_adversarial(AdversarialConfig.quick(), tmp_path / "mle", tmp_path / "gan", None, "ENR")
        assert calls == [("train", gold_mentions, "ENR"), ("dev", gold_mentions, "ENR"), ("test", False, None)]


PLANNED = """<?xml version="1.0" ?>
<benchmark>
  <entries>
    <entry category="Astronaut" eid="Id7" size="3">
      <lex comment="good" lid="Id1">
        <sortedtripleset>
          <sentence ID="1">
            <striple>Elliot_See | birthPlace | Dallas</striple>
          </sentence>
          <sentence ID="2">
            <striple>Elliot_See | nationality | United_States</striple>
            <striple>Elliot_See | nickname | "Ell"</striple>
          </sentence>
        </sortedtripleset>
        <references>
          <reference entity="Elliot_See" number="1" tag="AGENT-1" type="name">Eliot See</reference>
          <reference entity="Dallas" number="2" tag="PATIENT-1" type="name">Dallas</reference>
          <reference entity="Elliot_See" number="3" tag="AGENT-1" type="pronoun">He</reference>
          <reference entity="United_States" number="5" tag="PATIENT-2" type="description">the country</reference>
          <reference entity="&quot;Ell&quot;" number="4" tag="PATIENT-3" type="name">Ell</reference>
        </references>
        <text>Eliot See was born in Dallas. He, "Ell", was a national of the country.</text>
        <template>AGENT-1 was born in PATIENT-1 . AGENT-1 , `` PATIENT-3 '' , was a national of PATIENT-2 .</template>
      </lex>
      <lex comment="good" lid="Id2">
        <sortedtripleset>
          <sentence ID="1">
            <striple>Elliot_See | nationality | United_States</striple>
          </sentence>
          <sentence ID="2">
            <striple>Elliot_See | nickname | "Ell"</striple>
            <striple>Elliot_See | birthPlace | Dallas</striple>
          </sentence>
        </sortedtripleset>
        <references>
          <reference entity="Elliot_See" number="1" tag="AGENT-1" type="name">Elliot See</reference>
          <reference entity="United_States" number="2" tag="PATIENT-2" type="name">U.S.</reference>
          <reference entity="Dallas" number="3" tag="PATIENT-1" type="name">Dallas</reference>
          <reference entity="Elliot_See" number="4" tag="AGENT-1" type="name">See</reference>
          <reference entity="&quot;Ell&quot;" number="5" tag="PATIENT-3" type="name">Ell</reference>
          <reference entity="Dallas" number="6" tag="PATIENT-1" type="name">Dallas</reference>
        </references>
        <text>Elliot See, of Dallas, was a U.S. national! See, called Ell, was born in Dallas.</text>
        <template>AGENT-1 , of PATIENT-1 , was a PATIENT-2 national ! AGENT-1 , called PATIENT-3 , was born in PATIENT-1 .</template>
      </lex>
      <lex comment="good" lid="Id3">
        <sortedtripleset>
          <sentence ID="1"><striple>Elliot_See | birthPlace | Dallas</striple></sentence>
          <sentence ID="2"><striple>Elliot_See | nationality | United_States</striple></sentence>
        </sortedtripleset>
        <references>
          <reference entity="Elliot_See" number="1" tag="AGENT-1" type="name">Elliot See</reference>
        </references>
        <text>Elliot See was born in Dallas. He was American.</text>
        <template>AGENT-1 was born in PATIENT-1 . AGENT-1 was American .</template>
      </lex>
      <lex comment="good" lid="Id4">
        <sortedtripleset>
          <sentence ID="1"><striple>Elliot_See | birthPlace | Dallas</striple></sentence>
        </sortedtripleset>
        <references>
          <reference entity="Elliot_See" number="1" tag="AGENT-1" type="name">Elliot See</reference>
          <reference entity="Dallas" number="2" tag="PATIENT-1" type="name">Dallas</reference>
        </references>
        <text>Elliot See was born in Dallas.</text>
        <template>AGENT-1 was born in PATIENT-1 .</template>
      </lex>
    </entry>
  </entries>
</benchmark>
"""
PLANNED_TRIPLES = (
    Triple("Elliot_See", "nationality", "United_States"),
    Triple("Elliot_See", "birthPlace", "Dallas"),
    Triple("Elliot_See", "nickname", '"Ell"'),
)


@pytest.fixture
def planned_dir(tmp_path):
    return write_train_file(tmp_path / "planned", "3triples", PLANNED)


def test_sentence_plans_spell_out_each_planned_sentence(planned_dir):
    plans = enriched.load_sentence_plans("train", planned_dir)
    # Id3: two tags, one reference (left out); Id4: one sentence (nothing to split).
    assert set(plans) == {
        'Eliot See was born in Dallas. He, "Ell", was a national of the country.',
        "Elliot See, of Dallas, was a U.S. national! See, called Ell, was born in Dallas.",
    }
    first = plans['Eliot See was born in Dallas. He, "Ell", was a national of the country.']
    assert first == (
        (("Elliot_See | birthPlace | Dallas",), "Eliot See was born in Dallas .",
         (("Elliot_See", "Eliot See", "name"), ("Dallas", "Dallas", "name"))),
        (("Elliot_See | nationality | United_States", 'Elliot_See | nickname | "Ell"'),
         'He , " Ell " , was a national of the country .',
         (("Elliot_See", "He", "pronoun"), ('"Ell"', "Ell", "name"), ("United_States", "the country", "description"))),
    )


def test_sentence_entries_keep_sentences_that_name_exactly_their_triples_entities(planned_dir):
    plans = enriched.load_sentence_plans("train", planned_dir)
    texts = ("Elliot See, of Dallas, was a U.S. national! See, called Ell, was born in Dallas.",
             'Eliot See was born in Dallas. He, "Ell", was a national of the country.',
             "A text without a plan.")
    entry = WebNLGEntry("train/3triples/Astronaut/Id7", "Astronaut", 3, PLANNED_TRIPLES, texts)
    sentences = enriched.sentence_entries([entry], plans)
    # Text 1, sentence 1 names Dallas, which its triple lacks; text 2, sentence 2 names its
    # subject by a pronoun only: both left out.
    assert [(item.entry_id, item.triples, item.texts, item.mentions) for item in sentences] == [
        ("train/3triples/Astronaut/Id7/text1/sentence2",
         (Triple("Elliot_See", "birthPlace", "Dallas"), Triple("Elliot_See", "nickname", '"Ell"')),  # the entry's order
         ("See , called Ell , was born in Dallas .",), ((("Elliot_See", "See"), ('"Ell"', "Ell"), ("Dallas", "Dallas")),)),
        ("train/3triples/Astronaut/Id7/text2/sentence1", (Triple("Elliot_See", "birthPlace", "Dallas"),),
         ("Eliot See was born in Dallas .",), ((("Elliot_See", "Eliot See"), ("Dallas", "Dallas")),)),
    ]
    assert {item.category for item in sentences} == {"Astronaut"} and [item.size for item in sentences] == [2, 1]
    # A plan whose triples the entry does not hold gives nothing.
    other = WebNLGEntry("train/x", "Astronaut", 1, (Triple("Elliot_See", "birthPlace", "Houston"),), texts[1:2])
    assert enriched.sentence_entries([other], plans) == []


def test_the_mle_job_trains_on_sentence_entries_besides_whole_texts(tmp_path, monkeypatch):
    from onestep_gan.rdf2text import mle
    from onestep_gan.rdf2text.config import MLEConfig
    from tests.conftest import fixture_2017_dir

    text = "Alan Bean was born in Wheeler, Texas on March 15, 1932."
    sentence = "Alan Bean was born in Wheeler , Texas ."
    plan = {text: ((("Alan_Bean | birthPlace | Wheeler,_Texas",), sentence,
                    (("Alan_Bean", "Alan Bean", "name"), ("Wheeler,_Texas", "Wheeler , Texas", "name"))),)}
    monkeypatch.setattr(mle.enriched, "load_sentence_plans", lambda split, enriched_dir: plan)
    seen = {}
    build, encode = mle.TextPreprocessor.build, mle.TextPreprocessor.encode_entries

    def spy_build(entries, *args, **kwargs):
        seen["vocabulary"] = [entry.entry_id for entry in entries]
        return build(entries, *args, **kwargs)

    def spy_encode(self, entries, for_training):
        if for_training and "training" not in seen:
            seen["training"] = [(entry.entry_id, entry.texts) for entry in entries]
            raise RuntimeError("stopped after encoding the training examples")
        return encode(self, entries, for_training)

    monkeypatch.setattr(mle.TextPreprocessor, "build", staticmethod(spy_build))
    monkeypatch.setattr(mle.TextPreprocessor, "encode_entries", spy_encode)
    for sentence_examples in (False, True):
        seen.clear()
        config = MLEConfig.quick(gold_mentions=False, sentence_examples=sentence_examples)
        with pytest.raises(RuntimeError, match="stopped after encoding"):
            mle.train_and_evaluate(config, fixture_2017_dir(), tmp_path / "run", tmp_path / "enriched")
        added = [item for item in seen["training"] if item[0] not in seen["vocabulary"]]
        [bean] = [entry_id for entry_id, texts in seen["training"] if texts == (text,)]
        assert added == ([(f"{bean}/text1/sentence1", (sentence,))] if sentence_examples else [])
        assert len(seen["training"]) == len(seen["vocabulary"]) + len(added)  # whole texts stay
