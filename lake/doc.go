// Package lake is the vocabulary of lakehouse tables every layer of Sluice
// shares: the types of columns (Type and its implementations), fields with
// their ids (Field), schemas (Schema) and typed values (Value), as the
// engine, the filter language and every table format speak them.
//
// Formats convert their own schemas into these types (format/iceberg,
// format/delta); nothing in this package knows a format. The types follow
// the Iceberg specification, whose type system is a superset of what the
// engine serves, and print in its spelling ("long", "decimal(9, 2)",
// "list<string>"). Schema.ToArrow gives the Arrow schema the engine serves
// for a schema.
package lake
