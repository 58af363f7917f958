"""A catalog of 500 tools, generated deterministically for the search-mode tests.

25 domains of 4 kinds of record each, and the same 5 operations on every kind: each tool
has its own name, description and arguments built from the domain's label, the record's
gloss and its fields. ``queries.json`` holds 50 requests written by hand from these
descriptions (paraphrased, not copied) with the tool each one should find; it was used
while tuning the index. ``queries_heldout.tsv`` holds 50 more, written after the index was
frozen, for other tools; nothing is to be tuned on them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

# domain -> (label, [(record, gloss, [(field, what it is), x3])])
DOMAINS: dict[str, tuple[str, list[tuple[str, str, list[tuple[str, str]]]]]] = {
    "crm": (
        "the sales CRM",
        [
            (
                "contact",
                "a person at a customer company that the sales team talks to",
                [("email", "email address"), ("phone", "phone number"), ("company", "employer")],
            ),
            (
                "deal",
                "a sales opportunity moving through the pipeline",
                [
                    ("amount", "expected revenue"),
                    ("stage", "pipeline stage"),
                    ("close_date", "expected close date"),
                ],
            ),
            (
                "lead",
                "a prospect who has not been qualified yet",
                [
                    ("source", "where the lead came from"),
                    ("score", "lead score"),
                    ("owner", "sales rep"),
                ],
            ),
            (
                "account",
                "a customer organization",
                [
                    ("industry", "industry sector"),
                    ("employee_count", "company size"),
                    ("website", "home page"),
                ],
            ),
        ],
    ),
    "billing": (
        "billing",
        [
            (
                "invoice",
                "a bill sent to a customer for goods or services",
                [
                    ("amount_due", "total to pay"),
                    ("due_date", "payment deadline"),
                    ("currency", "ISO currency"),
                ],
            ),
            (
                "payment",
                "money received from a customer against an invoice",
                [
                    ("amount", "amount paid"),
                    ("method", "card, transfer or cash"),
                    ("paid_at", "payment time"),
                ],
            ),
            (
                "refund",
                "money given back to a customer",
                [
                    ("amount", "amount returned"),
                    ("reason", "why it was refunded"),
                    ("payment_id", "original payment"),
                ],
            ),
            (
                "subscription",
                "a recurring plan a customer is charged for",
                [
                    ("plan", "price plan"),
                    ("interval", "monthly or yearly"),
                    ("trial_days", "free trial length"),
                ],
            ),
        ],
    ),
    "hr": (
        "human resources",
        [
            (
                "employee",
                "a staff member on the payroll",
                [
                    ("job_title", "position"),
                    ("department", "team"),
                    ("start_date", "first working day"),
                ],
            ),
            (
                "leave_request",
                "a request for vacation or sick leave",
                [
                    ("start_date", "first day off"),
                    ("end_date", "last day off"),
                    ("leave_type", "vacation or sick"),
                ],
            ),
            (
                "payslip",
                "a monthly salary statement",
                [
                    ("period", "month covered"),
                    ("gross_pay", "pay before tax"),
                    ("net_pay", "pay after tax"),
                ],
            ),
            (
                "job_opening",
                "an open position the company is hiring for",
                [
                    ("title", "role name"),
                    ("location", "office or remote"),
                    ("salary_range", "pay band"),
                ],
            ),
        ],
    ),
    "calendar": (
        "the calendar",
        [
            (
                "event",
                "a meeting or appointment on someone's calendar",
                [("start", "start time"), ("end", "end time"), ("attendees", "people invited")],
            ),
            (
                "room_booking",
                "a reservation of a meeting room",
                [
                    ("room", "meeting room"),
                    ("start", "start time"),
                    ("duration_minutes", "length"),
                ],
            ),
            (
                "reminder",
                "an alert shown before an event begins",
                [
                    ("event_id", "event to remind about"),
                    ("minutes_before", "lead time"),
                    ("channel", "popup or email"),
                ],
            ),
            (
                "shared_calendar",
                "a calendar that several people can see",
                [
                    ("name", "calendar name"),
                    ("color", "display color"),
                    ("members", "who can see it"),
                ],
            ),
        ],
    ),
    "mail": (
        "email",
        [
            (
                "message",
                "an email in the inbox",
                [("to", "recipients"), ("subject", "subject line"), ("body", "message text")],
            ),
            (
                "draft",
                "an email that has been written but not sent",
                [("to", "recipients"), ("subject", "subject line"), ("body", "message text")],
            ),
            (
                "folder",
                "a mailbox folder that holds emails",
                [
                    ("name", "folder name"),
                    ("parent", "enclosing folder"),
                    ("color", "label color"),
                ],
            ),
            (
                "filter_rule",
                "a rule that sorts incoming mail automatically",
                [
                    ("condition", "what to match"),
                    ("action", "what to do"),
                    ("enabled", "on or off"),
                ],
            ),
        ],
    ),
    "storage": (
        "cloud storage",
        [
            (
                "file",
                "a file uploaded to cloud storage",
                [
                    ("path", "where it lives"),
                    ("size_bytes", "size"),
                    ("content_type", "MIME type"),
                ],
            ),
            (
                "directory",
                "a folder of files in cloud storage",
                [
                    ("path", "where it lives"),
                    ("owner", "who owns it"),
                    ("quota_bytes", "space allowed"),
                ],
            ),
            (
                "share_link",
                "a public link that lets anyone download a file",
                [
                    ("file_id", "file shared"),
                    ("expires_at", "when the link stops working"),
                    ("password", "optional password"),
                ],
            ),
            (
                "file_version",
                "an earlier revision of a stored file",
                [
                    ("file_id", "file"),
                    ("version_number", "revision"),
                    ("created_at", "when it was saved"),
                ],
            ),
        ],
    ),
    "support": (
        "the help desk",
        [
            (
                "ticket",
                "a customer support ticket describing a problem",
                [
                    ("subject", "short summary"),
                    ("priority", "urgency"),
                    ("requester", "customer who asked"),
                ],
            ),
            (
                "ticket_comment",
                "a reply or internal note on a support ticket",
                [
                    ("ticket_id", "ticket"),
                    ("body", "comment text"),
                    ("internal", "hidden from the customer"),
                ],
            ),
            (
                "sla_policy",
                "a response time target for support tickets",
                [
                    ("first_response_hours", "time to first reply"),
                    ("resolution_hours", "time to fix"),
                    ("priority", "which tickets"),
                ],
            ),
            (
                "canned_response",
                "a saved reply agents reuse for common questions",
                [("title", "name"), ("body", "reply text"), ("category", "topic")],
            ),
        ],
    ),
    "inventory": (
        "the inventory system",
        [
            (
                "product",
                "an item the company sells",
                [
                    ("sku", "stock keeping unit"),
                    ("price", "unit price"),
                    ("category", "product category"),
                ],
            ),
            (
                "stock_level",
                "the quantity of a product on hand at a warehouse",
                [
                    ("sku", "product"),
                    ("warehouse_id", "warehouse"),
                    ("quantity", "units available"),
                ],
            ),
            (
                "warehouse",
                "a site where goods are stored",
                [
                    ("address", "street address"),
                    ("capacity", "pallet capacity"),
                    ("manager", "site manager"),
                ],
            ),
            (
                "purchase_order",
                "an order placed with a supplier to restock goods",
                [("supplier", "vendor"), ("sku", "product"), ("quantity", "units ordered")],
            ),
        ],
    ),
    "shipping": (
        "shipping",
        [
            (
                "shipment",
                "a parcel sent to a customer",
                [
                    ("carrier", "delivery company"),
                    ("tracking_number", "tracking code"),
                    ("destination", "delivery address"),
                ],
            ),
            (
                "shipping_label",
                "a printable postage label for a parcel",
                [
                    ("shipment_id", "parcel"),
                    ("format", "PDF or ZPL"),
                    ("weight_grams", "parcel weight"),
                ],
            ),
            (
                "pickup",
                "a courier appointment to collect parcels",
                [
                    ("address", "where to collect"),
                    ("date", "collection day"),
                    ("parcel_count", "number of parcels"),
                ],
            ),
            (
                "return_shipment",
                "a parcel a customer sends back",
                [
                    ("order_id", "original order"),
                    ("reason", "why it is returned"),
                    ("carrier", "delivery company"),
                ],
            ),
        ],
    ),
    "analytics": (
        "analytics",
        [
            (
                "dashboard",
                "a page of charts about the business",
                [
                    ("title", "dashboard name"),
                    ("charts", "charts shown"),
                    ("refresh_minutes", "refresh rate"),
                ],
            ),
            (
                "scheduled_report",
                "a report emailed on a schedule",
                [
                    ("query", "data selected"),
                    ("schedule", "cron schedule"),
                    ("recipients", "who gets it"),
                ],
            ),
            (
                "metric",
                "a named business KPI computed from events",
                [
                    ("name", "metric name"),
                    ("formula", "how it is computed"),
                    ("unit", "unit of measure"),
                ],
            ),
            (
                "funnel",
                "a sequence of conversion steps users go through",
                [
                    ("steps", "events in order"),
                    ("window_days", "conversion window"),
                    ("segment", "user segment"),
                ],
            ),
        ],
    ),
    "devops": (
        "the infrastructure platform",
        [
            (
                "deployment",
                "a release of a service version to an environment",
                [
                    ("service", "service name"),
                    ("version", "build to deploy"),
                    ("environment", "staging or production"),
                ],
            ),
            (
                "vm_instance",
                "a virtual machine running in the cloud",
                [
                    ("region", "data center region"),
                    ("machine_type", "CPU and memory size"),
                    ("image", "OS image"),
                ],
            ),
            (
                "dns_record",
                "a domain name system record",
                [("hostname", "host"), ("record_type", "A, CNAME or TXT"), ("value", "target")],
            ),
            (
                "alert_rule",
                "a monitoring threshold that pages the on-call engineer",
                [
                    ("metric", "what is watched"),
                    ("threshold", "limit"),
                    ("severity", "how urgent"),
                ],
            ),
        ],
    ),
    "code": (
        "code hosting",
        [
            (
                "repository",
                "a git repository of source code",
                [
                    ("name", "repository name"),
                    ("visibility", "public or private"),
                    ("default_branch", "main branch"),
                ],
            ),
            (
                "pull_request",
                "a proposed change to merge into a branch",
                [
                    ("title", "summary"),
                    ("source_branch", "branch with the change"),
                    ("reviewers", "who reviews"),
                ],
            ),
            (
                "branch",
                "a line of development in a repository",
                [
                    ("name", "branch name"),
                    ("from_ref", "commit it starts from"),
                    ("protected", "push rules"),
                ],
            ),
            (
                "release_tag",
                "a tagged release of the code with notes",
                [("tag", "version tag"), ("notes", "release notes"), ("commit", "tagged commit")],
            ),
        ],
    ),
    "chat": (
        "team chat",
        [
            (
                "channel",
                "a chat room for a team or topic",
                [
                    ("name", "channel name"),
                    ("private", "invite only"),
                    ("topic", "what it is about"),
                ],
            ),
            (
                "chat_message",
                "a message posted in a chat channel",
                [
                    ("channel_id", "channel"),
                    ("text", "message text"),
                    ("thread_id", "thread replied to"),
                ],
            ),
            (
                "emoji_reaction",
                "an emoji added to a chat message",
                [("message_id", "message"), ("emoji", "emoji name"), ("user", "who reacted")],
            ),
            (
                "webhook",
                "an incoming webhook that posts into a channel",
                [("channel_id", "channel"), ("url", "endpoint"), ("secret", "signing secret")],
            ),
        ],
    ),
    "projects": (
        "project management",
        [
            (
                "project",
                "a project with a goal and a team",
                [("name", "project name"), ("deadline", "due date"), ("lead", "project lead")],
            ),
            (
                "task",
                "a to-do item assigned to someone in a project",
                [("title", "what to do"), ("assignee", "who does it"), ("due_date", "deadline")],
            ),
            (
                "milestone",
                "a checkpoint date in a project plan",
                [
                    ("name", "milestone name"),
                    ("date", "target date"),
                    ("deliverables", "what is due"),
                ],
            ),
            (
                "time_entry",
                "hours logged against a task",
                [("task_id", "task"), ("hours", "time spent"), ("note", "what was done")],
            ),
        ],
    ),
    "marketing": (
        "email marketing",
        [
            (
                "campaign",
                "a newsletter sent to a mailing list",
                [
                    ("audience", "who receives it"),
                    ("send_date", "when it goes out"),
                    ("subject", "subject line"),
                ],
            ),
            (
                "audience_segment",
                "a group of subscribers chosen by rules",
                [("rules", "who belongs"), ("name", "segment name"), ("size", "subscriber count")],
            ),
            (
                "landing_page",
                "a web page that collects sign-ups",
                [
                    ("url", "page address"),
                    ("headline", "main title"),
                    ("form_fields", "fields asked"),
                ],
            ),
            (
                "coupon",
                "a discount code customers enter at checkout",
                [
                    ("code", "coupon code"),
                    ("percent_off", "discount"),
                    ("expires_at", "last valid day"),
                ],
            ),
        ],
    ),
    "social": (
        "social media",
        [
            (
                "social_post",
                "a post published to a social network",
                [
                    ("platform", "network"),
                    ("text", "post text"),
                    ("scheduled_for", "publish time"),
                ],
            ),
            (
                "social_profile",
                "a connected social network account",
                [("platform", "network"), ("handle", "username"), ("access_token", "credential")],
            ),
            (
                "hashtag_watch",
                "a hashtag being tracked for mentions",
                [
                    ("hashtag", "tag to track"),
                    ("alert_threshold", "mentions per hour"),
                    ("platform", "network"),
                ],
            ),
            (
                "direct_message",
                "a private message to another social media user",
                [("recipient", "who gets it"), ("text", "message text"), ("platform", "network")],
            ),
        ],
    ),
    "travel": (
        "travel booking",
        [
            (
                "flight_booking",
                "an airline reservation",
                [
                    ("origin", "departure airport"),
                    ("destination", "arrival airport"),
                    ("departure_date", "travel day"),
                ],
            ),
            (
                "hotel_reservation",
                "a hotel room reservation",
                [("city", "where"), ("check_in", "arrival day"), ("check_out", "departure day")],
            ),
            (
                "car_rental",
                "a rental car reservation",
                [
                    ("pickup_location", "where to collect the car"),
                    ("pickup_date", "start"),
                    ("car_class", "vehicle size"),
                ],
            ),
            (
                "itinerary",
                "a trip plan that groups bookings",
                [
                    ("traveler", "who travels"),
                    ("start_date", "first day"),
                    ("bookings", "bookings included"),
                ],
            ),
        ],
    ),
    "restaurant": (
        "the restaurant",
        [
            (
                "menu_item",
                "a dish on the restaurant menu",
                [("name", "dish name"), ("price", "price"), ("allergens", "allergy information")],
            ),
            (
                "table_reservation",
                "a booking for a table",
                [
                    ("party_size", "number of guests"),
                    ("time", "arrival time"),
                    ("guest_name", "name on booking"),
                ],
            ),
            (
                "delivery_order",
                "a food order delivered to a home",
                [
                    ("items", "dishes ordered"),
                    ("address", "delivery address"),
                    ("tip", "driver tip"),
                ],
            ),
            (
                "review",
                "a guest's rating and comment about a meal",
                [
                    ("rating", "stars"),
                    ("comment", "what the guest wrote"),
                    ("visit_date", "when they ate"),
                ],
            ),
        ],
    ),
    "clinic": (
        "the clinic",
        [
            (
                "patient",
                "a patient's medical record",
                [
                    ("name", "full name"),
                    ("date_of_birth", "birthday"),
                    ("insurance_number", "insurer id"),
                ],
            ),
            (
                "appointment",
                "a visit scheduled with a doctor",
                [("doctor", "physician"), ("time", "visit time"), ("reason", "why they come")],
            ),
            (
                "prescription",
                "a medication order written by a doctor",
                [("drug", "medicine"), ("dosage", "how much"), ("refills", "repeat count")],
            ),
            (
                "lab_result",
                "the outcome of a blood or lab test",
                [
                    ("test_name", "test"),
                    ("value", "measured value"),
                    ("reference_range", "normal range"),
                ],
            ),
        ],
    ),
    "school": (
        "the school",
        [
            (
                "course",
                "a class students enroll in",
                [
                    ("title", "course name"),
                    ("credits", "credit points"),
                    ("teacher", "instructor"),
                ],
            ),
            (
                "student",
                "a learner enrolled at the school",
                [
                    ("name", "full name"),
                    ("grade_level", "year"),
                    ("guardian_email", "parent contact"),
                ],
            ),
            (
                "assignment",
                "homework with a due date",
                [
                    ("course_id", "course"),
                    ("due_date", "deadline"),
                    ("max_points", "points possible"),
                ],
            ),
            (
                "grade",
                "the score a student received",
                [("student_id", "student"), ("assignment_id", "assignment"), ("points", "score")],
            ),
        ],
    ),
    "realestate": (
        "the real estate listings",
        [
            (
                "property_listing",
                "a house or apartment for sale",
                [
                    ("address", "street address"),
                    ("price", "asking price"),
                    ("bedrooms", "number of bedrooms"),
                ],
            ),
            (
                "viewing",
                "a scheduled tour of a property by a buyer",
                [("listing_id", "property"), ("time", "tour time"), ("buyer", "who visits")],
            ),
            (
                "offer",
                "a buyer's bid on a property",
                [
                    ("listing_id", "property"),
                    ("amount", "offered price"),
                    ("conditions", "contingencies"),
                ],
            ),
            (
                "lease",
                "a rental contract for a home",
                [("tenant", "renter"), ("monthly_rent", "rent"), ("term_months", "length")],
            ),
        ],
    ),
    "home": (
        "the smart home",
        [
            (
                "device",
                "a connected thermostat, light or lock",
                [
                    ("room", "where it is"),
                    ("kind", "device type"),
                    ("firmware", "software version"),
                ],
            ),
            (
                "automation",
                "a rule that runs actions when something happens at home",
                [
                    ("trigger", "what starts it"),
                    ("actions", "what it does"),
                    ("enabled", "on or off"),
                ],
            ),
            (
                "scene",
                "a saved set of light and device settings",
                [("name", "scene name"), ("settings", "device states"), ("room", "where")],
            ),
            (
                "sensor_reading",
                "a temperature, humidity or motion measurement",
                [("sensor_id", "sensor"), ("value", "measured value"), ("measured_at", "time")],
            ),
        ],
    ),
    "banking": (
        "online banking",
        [
            (
                "bank_account",
                "a checking or savings account",
                [
                    ("iban", "account number"),
                    ("holder", "owner"),
                    ("account_type", "checking or savings"),
                ],
            ),
            (
                "wire_transfer",
                "money sent from one bank account to another",
                [("from_account", "source"), ("to_iban", "beneficiary"), ("amount", "sum sent")],
            ),
            (
                "budget",
                "a monthly spending limit for a category",
                [
                    ("category", "spending category"),
                    ("limit", "monthly cap"),
                    ("month", "which month"),
                ],
            ),
            (
                "expense_claim",
                "a purchase an employee asks to be reimbursed for",
                [("amount", "cost"), ("receipt_url", "scanned receipt"), ("merchant", "shop")],
            ),
        ],
    ),
    "identity": (
        "the identity provider",
        [
            (
                "login_account",
                "a login for the company's applications",
                [
                    ("username", "login name"),
                    ("role", "access level"),
                    ("mfa_enabled", "two-factor on"),
                ],
            ),
            (
                "api_key",
                "a secret token programs use to call the API",
                [("label", "what it is for"), ("scopes", "permissions"), ("expires_at", "expiry")],
            ),
            (
                "permission_role",
                "a named set of permissions",
                [
                    ("name", "role name"),
                    ("permissions", "what it allows"),
                    ("description", "purpose"),
                ],
            ),
            (
                "sso_connection",
                "a single sign-on link to an external identity provider",
                [
                    ("provider", "SAML or OIDC provider"),
                    ("domain", "email domain"),
                    ("metadata_url", "configuration"),
                ],
            ),
        ],
    ),
    "legal": (
        "contract management",
        [
            (
                "contract",
                "a legal agreement between parties",
                [
                    ("parties", "who signs"),
                    ("effective_date", "start"),
                    ("value", "contract value"),
                ],
            ),
            (
                "signature_request",
                "a request for people to sign a document electronically",
                [
                    ("document_id", "document"),
                    ("signers", "who must sign"),
                    ("message", "note to signers"),
                ],
            ),
            (
                "document_template",
                "a reusable template for legal documents",
                [
                    ("name", "template name"),
                    ("body", "template text"),
                    ("variables", "placeholders"),
                ],
            ),
            (
                "clause",
                "a standard paragraph reused in contracts",
                [
                    ("title", "clause name"),
                    ("text", "clause wording"),
                    ("jurisdiction", "applicable law"),
                ],
            ),
        ],
    ),
}

VERBS = ("list", "get", "create", "update", "delete")


def plural(word: str) -> str:
    """The plural of a record name (``entry`` -> ``entries``)."""
    if word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    return word + "s"


def _describe(
    verb: str, label: str, gloss: str, record: str, fields: list[tuple[str, str]]
) -> str:
    words = record.replace("_", " ")
    (f1, d1), (f2, d2), (_, d3) = fields
    if verb == "list":
        return (
            f"List the {plural(words)} in {label} ({gloss}), newest first; "
            f"filter by {f1.replace('_', ' ')} or {f2.replace('_', ' ')}."
        )
    if verb == "get":
        return f"Get one {words} from {label} by its id: {gloss}, with its {d1}, {d2} and {d3}."
    if verb == "create":
        return f"Create a new {words} in {label}, {gloss}, giving its {d1}, {d2} and {d3}."
    if verb == "update":
        return f"Update an existing {words} in {label} ({gloss}): change its {d1}, {d2} or {d3}."
    return f"Delete a {words} from {label} permanently ({gloss}); this cannot be undone."


def _schema(verb: str, record: str, fields: list[tuple[str, str]]) -> dict[str, Any]:
    ident = {
        f"{record}_id": {"type": "string", "description": f"id of the {record.replace('_', ' ')}"}
    }
    values = {name: {"type": "string", "description": what} for name, what in fields}
    if verb == "list":
        properties: dict[str, Any] = {
            fields[0][0]: values[fields[0][0]],
            fields[1][0]: values[fields[1][0]],
            "limit": {"type": "integer", "description": "page size"},
        }
        required: list[str] = []
    elif verb == "get" or verb == "delete":
        properties, required = ident, [f"{record}_id"]
    elif verb == "create":
        properties, required = values, [fields[0][0]]
    else:
        properties, required = {**ident, **values}, [f"{record}_id"]
    return {"type": "object", "properties": properties, "required": required}


def tools() -> Iterator[tuple[str, str, str, dict[str, Any]]]:
    """(domain, tool name, description, input schema) of each of the 500 tools."""
    for domain, (label, records) in DOMAINS.items():
        for record, gloss, fields in records:
            for verb in VERBS:
                noun = plural(record) if verb == "list" else record
                name = f"{domain}_{verb}_{noun}"
                yield (
                    domain,
                    name,
                    _describe(verb, label, gloss, record, fields),
                    _schema(verb, record, fields),
                )
