"""Small hand-made facts shared by store tests."""

from eval.types import Entity, Fact


def toy_facts() -> list[Fact]:
    paris, lyon, france = Entity("Paris", "Q90"), Entity("Lyon", "Q456"), Entity("France", "Q142")
    spain = Entity("Spain", "Q29")
    return [
        Fact("1", "toy", "P131", paris, france),
        Fact("2", "toy", "P131", lyon, france),
        Fact("3", "toy", "P47", spain, france),
        Fact("4", "toy", "P47", france, spain),
        Fact("5", "toy", "P47", france, Entity("Italy", "Q38")),
        Fact("6", "toy", "date_of_birth", Entity("Nobody"), Entity("1941")),
    ]
