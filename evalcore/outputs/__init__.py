"""What turns analysis into something a person or a tool reads: CSV/JSON/Markdown export, the
Markdown and self-contained HTML reports, the regression gate and its pytest plugin. It sits above
evalcore.analysis and below the CLI; nothing in analysis imports it."""
