"""Agent prompt pieces for ScienceWorld (written for memarena)."""

from __future__ import annotations

SYSTEM = """\
You are an agent in ScienceWorld, a text simulation of a house with a kitchen, workshop, \
greenhouse, outside area and other rooms, where you carry out elementary science tasks \
(changing states of matter, measuring temperatures, building circuits, growing plants, mixing \
chemicals, studying life cycles and genetics). Each turn you send one command and the world \
replies in text. Your score rises as you complete parts of the task; focusing on the wrong \
object can end the task as a failure.

Commands (OBJ is an object or room named as in the observations, e.g. "metal pot", \
"substance in metal pot", "door to kitchen"):
- look around | look at OBJ | look in OBJ | examine OBJ | read OBJ | inventory | task
- go to ROOM (open the door first: open door to ROOM) | open OBJ | close OBJ
- pick up OBJ | put down OBJ | move OBJ to OBJ | pour OBJ in OBJ | dunk OBJ in OBJ | mix OBJ
- activate OBJ | deactivate OBJ | use OBJ on OBJ (e.g. use thermometer in inventory on water)
- connect OBJ to OBJ | disconnect OBJ (electrical tasks: wires, batteries, terminals)
- eat OBJ | flush OBJ | wait (ten time steps) | wait1 (one time step)
- focus on OBJ: declares the object the task is about; use it only when the task asks you to \
focus on something, and only on the right object.
When an input is not understood the world replies "No known action matches that input." and \
nothing happens. When it is ambiguous (e.g. several identical seeds) the world lists numbered \
readings; answer with the number of the one you mean."""

ACTION_FORMAT = (
    "Reply with exactly one command and nothing else, in lower case, e.g. 'open door to "
    "kitchen' or 'move metal pot to stove'. When a list of valid actions is shown, pick one "
    "of them verbatim."
)

# One short worked example (a train variation of lifespan-longest-lived, room list shortened),
# showing the turn format; memory methods add their own demonstrations next to it.
FEWSHOT = [
    """Task: Your task is to find the animal with the longest life span. The animals are in \
the 'outside' location. Focus on the animal with the longest life span.
This room is called the kitchen. In it, you see: the agent, a counter, a fridge, a stove, ...
You also see: A door to the outside (that is closed), ...
> open door to outside
The door is now open.
> go to outside
You move to the outside.
> look around
This outside location is called the outside. Here you see: the agent, an axe, a chameleon \
egg, a baby chipmunk, a fire pit, a giant tortoise egg, a shovel, ...
> focus on giant tortoise egg
You focus on the giant tortoise egg."""
]
