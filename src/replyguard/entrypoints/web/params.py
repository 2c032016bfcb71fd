"""Parameter types shared by the pages and the API.

An id that no row can have (0, negative, beyond a 64-bit integer) is refused at the edge as a
bad request: past 2**63 - 1 the database driver itself would fail, which must never be a 500.
"""

from typing import Annotated

from fastapi import Path, Query
from pydantic import Field

from replyguard.service_layer.queries import MAX_PAGE, MAX_PER_PAGE

MAX_ID = 2**63 - 1

#: An object id in a URL path.
ObjectId = Annotated[int, Path(ge=1, le=MAX_ID)]
#: An object id in a body or a form.
BodyId = Annotated[int, Field(ge=1, le=MAX_ID)]
#: A 1-based page of a list, and how many rows it has.
PageNumber = Annotated[int, Query(ge=1, le=MAX_PAGE)]
PerPage = Annotated[int, Query(ge=1, le=MAX_PER_PAGE)]
