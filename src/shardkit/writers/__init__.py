"""Writers: construct declarations for records plus plain-Python layout, one module per format.

Every writer's output must parse back through the Kaitai reader (tests check it).
"""
