"""Builders for known phrases: noun phrases with their gold alignments.

:class:`NounPhrases` makes every noun-phrase form (bare, possessive, counted, relative
clauses ...) from :class:`Words`; :mod:`~seq2seq.data.synthetic.clauses` builds clauses
around them.
"""

from __future__ import annotations

from seq2seq.data.synthetic.grammar_file import Noun
from seq2seq.data.synthetic.phrase import CrossLink, NounPhrase, Phrase
from seq2seq.data.synthetic.words import Words, lookup

#: Possible links in a relative clause: the article to the head noun, "that" / "who" to 的.
_ARTICLE_AND_RELATIVE: tuple[CrossLink, ...] = (
    ("head", 0, "article", 0),
    ("modifier", 0, "relative", 0),
)


class NounPhrases:
    """Noun phrases as subject and object (``书``: ``the book`` / ``books``)."""

    def __init__(self, words: Words) -> None:
        self.words = words

    def np(self, value: NounPhrase | str) -> NounPhrase:
        """``value`` itself, or the noun phrase of a single word."""
        return value if isinstance(value, NounPhrase) else self.noun(value)

    def noun(self, zh: str) -> NounPhrase:
        """A pronoun, name, place or bare noun (书: subject ``the book``, object ``books``)."""
        w = self.words
        if zh in w.pronouns:
            p = w.pronouns[zh]
            subject, obj = w.word(zh, (p.subject,)), w.word(zh, (p.object,))
            return NounPhrase(subject, obj, p.person, p.plural, zh)
        if zh in w.names or zh in w.places:
            entry = w.names.get(zh) or w.places[zh]
            phrase = w.word(zh, entry.en)
            return NounPhrase(phrase, phrase, head=zh)
        noun = lookup(w.nouns, zh, "noun, pronoun, name or place")
        singular = w.word(zh, noun.en)
        if noun.mass:
            return NounPhrase(singular, singular, head=zh)
        return NounPhrase(w.with_article(singular, 0), w.word(zh, noun.plural), head=zh)

    def modified(self, zh: str, adjective: str) -> NounPhrase:
        """新 的 书: subject ``the new book``, object ``new books``."""
        w = self.words
        noun = lookup(w.nouns, zh, "noun")
        mod = w.modifier(adjective)
        singular = mod + w.word(zh, noun.en)
        if noun.mass:
            return NounPhrase(singular, singular, head=zh)
        subject = w.with_article(singular, len(singular.zh) - 1)
        return NounPhrase(subject, mod + w.word(zh, noun.plural), head=zh)

    def _count_noun(self, zh: str) -> Noun:
        noun = lookup(self.words.nouns, zh, "noun")
        if noun.mass:
            raise ValueError(f"{zh} is a mass noun; it has no measure word")
        return noun

    def counted(self, zh: str, number: str, adjective: str | None = None) -> NounPhrase:
        """三 本 [新 的] 书 -> three [new] books (measure word and 的 unaligned)."""
        w = self.words
        noun = self._count_noun(zh)
        num = lookup(w.numbers, number, "number")
        form = noun.en if num.value == 1 else noun.plural
        phrase = (
            w.word(number, num.en)
            + Phrase((noun.measure,))  # type: ignore[arg-type]
            + w.modifier(adjective)
            + w.word(zh, form)
        )
        return NounPhrase(phrase, phrase, plural=num.value != 1, head=zh)

    def this(self, zh: str, adjective: str | None = None) -> NounPhrase:
        """这 本 [新 的] 书 -> this [new] book."""
        w = self.words
        noun = self._count_noun(zh)
        phrase = (
            w.function("demonstrative")
            + Phrase((noun.measure,))  # type: ignore[arg-type]
            + w.modifier(adjective)
            + w.word(zh, noun.en)
        )
        return NounPhrase(phrase, phrase, head=zh)

    def possessive(self, owner: str, zh: str) -> NounPhrase:
        """我 的 书 -> my book (的 unaligned)."""
        w = self.words
        pronoun = lookup(w.pronouns, owner, "pronoun")
        noun = lookup(w.nouns, zh, "noun")
        phrase = w.word(owner, (pronoun.possessive,)) + w.marker("modifier") + w.word(zh, noun.en)
        return NounPhrase(phrase, phrase, head=zh)

    def relative(
        self, zh: str, subject: NounPhrase | str, verb: str, time: str | None = None
    ) -> NounPhrase:
        """我 [昨天] 买 的 书 -> the book that I bought [yesterday] (past tense)."""
        w = self.words
        noun = lookup(w.nouns, zh, "noun")
        entry = lookup(w.transitive, verb, "transitive verb")
        parts = {
            "subject": self.np(subject).as_subject,
            "time": w.time(time, "past"),
            "verb": w.word(verb, entry.forms[2]),  # past
            "modifier": w.marker("modifier"),
            "head": w.word(zh, noun.en),
            "article": w.the,
            "relative": Phrase((), (w.en.relative,)),
        }
        phrase = w.arrange("relative_clause", parts, (), _ARTICLE_AND_RELATIVE)
        return NounPhrase(phrase, phrase, head=zh, relative=True)

    def subject_relative(self, zh: str, verb: str, obj: NounPhrase | str) -> NounPhrase:
        """喜欢 猫 的 学生 -> the student who likes cats."""
        w = self.words
        noun = lookup(w.nouns, zh, "noun")
        entry = lookup(w.transitive, verb, "transitive verb")
        parts = {
            "verb": w.word(verb, entry.forms[1]),  # third person singular
            "object": self.np(obj).as_object,
            "modifier": w.marker("modifier"),
            "head": w.word(zh, noun.en),
            "article": w.the,
            "relative": Phrase((), (w.en.relative_person,)),
        }
        phrase = w.arrange("subject_relative_clause", parts, (), _ARTICLE_AND_RELATIVE)
        return NounPhrase(phrase, phrase, head=zh, relative=True)
