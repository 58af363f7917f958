"""A server that ships the skills that teach an agent to use its tool (SEP-2640).

``mcpactor serve examples/skills_server.py`` serves the tool ``convert``, the skills of
``examples/skills/`` as ``skill://`` resources with ``skill://index.json``, and a
parameterized skill per unit, ``skill://units/{unit}/SKILL.md``, whose ``unit`` a client
can complete.
"""

from pathlib import Path

from mcpactor_skills import SkillTemplate, skills_extension

from mcpactor import RequestError, Server

#: metres per unit
UNITS = {"metre": 1.0, "inch": 0.0254, "foot": 0.3048, "mile": 1609.344}


def unit_skill(unit: str) -> str:
    """The SKILL.md of one unit: its name is the unit, the last segment of its path."""
    if unit not in UNITS:
        raise RequestError(-32602, f"no skill for the unit {unit!r}")
    return (
        f"---\nname: {unit}\ndescription: What a {unit} is and how to convert it.\n---\n\n"
        f"# {unit}\n\nOne {unit} is {UNITS[unit]} metres: call `convert(value, {unit!r})`.\n"
    )


server = Server(
    "units",
    version="1.0.0",
    extensions=[
        skills_extension(
            Path(__file__).parent / "skills",
            templates=[
                SkillTemplate(
                    "skill://units/{unit}/SKILL.md",
                    "How to convert to and from one unit",
                    unit_skill,
                )
            ],
        )
    ],
)


@server.tool()
def convert(value: float, unit: str) -> float:
    """Convert a length in ``unit`` (metre, inch, foot, mile) to metres."""
    if unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}: one of {', '.join(UNITS)}")
    return value * UNITS[unit]


@server.completion("skill://units/{unit}/SKILL.md", "unit")
def complete_unit(value: str, context: dict[str, str]) -> list[str]:
    return [unit for unit in UNITS if unit.startswith(value)]
