"""The product picker of the lead import and the campaign form: an existing product, or a new
one named on purpose. A typo never becomes a new, empty product (the CLI's `--create-product`
rule, on the web)."""

from __future__ import annotations

from replyguard.service_layer.queries.products import ProductNotFound, require_product
from replyguard.service_layer.uow import UnitOfWork

#: The picker's "a new product" choice (no product can be named this: names are trimmed).
NEW_PRODUCT = " new "


class BadProduct(ValueError):
    """No product chosen, or one that does not exist (the message names those that do)."""


def picked_product(uow: UnitOfWork, product: str, new_product: str) -> tuple[str, bool]:
    """(the product's name, whether to create it) from the picker's two fields."""
    name = " ".join(new_product.split())
    if product == NEW_PRODUCT:
        if not name:
            raise BadProduct("Name the new product, or choose an existing one.")
        return name, True
    product = " ".join(product.split())
    if not product:
        raise BadProduct("Choose the product these belong to.")
    if name and name != product:
        raise BadProduct('To create a product, choose "A new product" and name it.')
    try:
        require_product(uow, product)
    except ProductNotFound as exc:
        raise BadProduct(f"{exc}: choose one, or create it on purpose") from None
    return product, False
