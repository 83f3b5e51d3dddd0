"""`--help` that fits a screen: options listed under titled groups, one sentence each.

`option(group, *decls, details=..., **attrs)` declares a click option that belongs to a group
("Common", "1-slack", ...) and may carry a longer explanation, `details`, which the man pages
print after the help sentence (svmtools.manpages) and --help leaves out.
"""

import click


class GroupedOption(click.Option):
    def __init__(self, *args, group="Options", details=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.group, self.details = group, details

    def get_help_record(self, ctx):
        """click's record without the range of a numeric range type (the message of a value out
        of range says it; on every line it costs a screen of --help)."""
        record = super().get_help_record(ctx)
        if record is not None and isinstance(self.type, click.types._NumberRangeBase):
            span = self.type._describe_range()
            record = (record[0], record[1].replace(f"; {span}]", "]").replace(f"  [{span}]", ""))
        return record


def option(group, *decls, details=None, **attrs):
    return click.option(*decls, cls=GroupedOption, group=group, details=details, **attrs)


class GroupedCommand(click.Command):
    """A command whose --help lists its options group by group, in the order first declared."""

    def format_options(self, ctx, formatter):
        groups = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx) if isinstance(param, click.Option) else None
            if record is not None:
                groups.setdefault(getattr(param, "group", "Common"), []).append(record)
        for title, records in groups.items():
            with formatter.section(title if title.endswith("options") else f"{title} options"):
                formatter.write_dl(records)
