"""Writes a script for QueryPilot's scripted model (querypilot-scripted-llm)
that answers a few kinds of question about any database, from its schema, so
that you can watch QueryPilot's loop on your own data before configuring a
real model. scripts/try.sh uses it.

Usage: scripted_policy.py DATABASE > script.json

The questions it answers (any case), for each table T and column C of T:
  how many T ...      SELECT COUNT(*) ... FROM T; its first reply names the
                      table wrongly (orders <-> order), as models do, so you
                      see the error, the hint and the corrected second attempt
  T by C ...          SELECT C, COUNT(*) AS n FROM T GROUP BY C ORDER BY n DESC
                      LIMIT 10: the ten commonest values only
  show T ... / list T ...
                      SELECT * FROM T LIMIT 5
Anything else gets a reply with no SQL that lists these forms with your
table names."""
import json
import sqlite3
import sys


def quote(name):
    return '"%s"' % name.replace('"', '""')


def fenced(sql):
    return "```sql\n%s\n```" % sql


def policy(path):
    con = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        tables = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name")]
        columns = {t: [r[1] for r in con.execute("SELECT * FROM pragma_table_info(?)", (t,))] for t in tables}
    finally:
        con.close()
    names = {t.lower() for t in tables}
    rules = []
    # Longest names first: "how many order_items" is not "how many order".
    for t in sorted(tables, key=len, reverse=True):
        wrong = t[:-1] if t.endswith("s") else t + "s"
        if wrong.lower() in names or not wrong:
            wrong = t + "_all"
        rules.append({"match": "Question: how many %s" % t, "ignore_case": True, "replies": [
            "Counting the rows:\n\n" + fenced("SELECT COUNT(*) AS %s FROM %s;" % (quote("number of " + t), quote(wrong))),
            fenced("SELECT COUNT(*) AS %s FROM %s;" % (quote("number of " + t), quote(t))),
        ]})
        for c in sorted(columns[t], key=len, reverse=True):
            rules.append({"match": "Question: %s by %s" % (t, c), "ignore_case": True, "replies": [
                fenced("SELECT %s, COUNT(*) AS n FROM %s GROUP BY %s ORDER BY n DESC LIMIT 10;"
                       % (quote(c), quote(t), quote(c)))]})
        for verb in ("show", "list"):
            rules.append({"match": "Question: %s %s" % (verb, t), "ignore_case": True,
                          "replies": [fenced("SELECT * FROM %s LIMIT 5;" % quote(t))]})
    example = tables[0] if tables else "<table>"
    example_column = columns[example][0] if tables and columns[example] else "<column>"
    default = ("I am QueryPilot's scripted test model, not a real one: I answer only 'how many <table>', "
               "'<table> by <column>' and 'show <table>' (here, e.g. 'how many %s', '%s by %s'). "
               "The tables: %s. Configure a real model to ask anything (docs/providers/)."
               % (example, example, example_column, ", ".join(tables) or "none"))
    return {"_comment": "Written by scripts/scripted_policy.py for %s" % path, "rules": rules, "default": default}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    json.dump(policy(sys.argv[1]), sys.stdout, indent=1)
    sys.stdout.write("\n")
