"""The foundation every layer may import: bounded parsing (YAML, JSON values, HTTP bodies, reply
charsets, text files), inert text for terminals, CSV formula guards, secret-free URLs and file
fingerprints. It imports nothing of evalcore's but `evalcore.errors`."""
