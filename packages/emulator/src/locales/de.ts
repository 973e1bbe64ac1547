/** Words for contacts from Germany (de-DE). */
import type { LocaleWords } from '../locale-words.js';

export const DE: LocaleWords = {
  country: 'DE',
  weight: 10,
  tld: 'de',
  linkGreeting: 'Hallo! Ich möchte mehr erfahren über',
  firstNames: [
    'Lukas', 'Leon', 'Finn', 'Jonas', 'Paul', 'Felix', 'Maximilian', 'Elias', 'Noah', 'Ben',
    'Thomas', 'Michael', 'Andreas', 'Stefan', 'Christian', 'Markus', 'Frank', 'Jürgen', 'Matthias', 'Sebastian',
    'Tobias', 'Florian', 'Alexander', 'Daniel', 'Jan', 'Tim', 'Niklas', 'Moritz', 'Philipp', 'Dominik',
    'Uwe', 'Klaus', 'Wolfgang', 'Dirk', 'Sven', 'Kai', 'Lars', 'Jörg', 'Emre', 'Mehmet',
    'Anna', 'Marie', 'Sophie', 'Lena', 'Laura', 'Lea', 'Hannah', 'Emma', 'Mia', 'Johanna',
    'Sabine', 'Petra', 'Claudia', 'Andrea', 'Stefanie', 'Katrin', 'Julia', 'Sandra', 'Nicole', 'Susanne',
    'Melanie', 'Christina', 'Jana', 'Franziska', 'Lisa', 'Sarah', 'Katharina', 'Nina', 'Carina', 'Vanessa',
    'Ursula', 'Monika', 'Birgit', 'Heike', 'Anja', 'Jessica', 'Leonie', 'Clara', 'Greta', 'Elif',
  ],
  lastNames: [
    'Müller', 'Schmidt', 'Schneider', 'Fischer', 'Weber', 'Meyer', 'Wagner', 'Becker', 'Schulz', 'Hoffmann',
    'Schäfer', 'Koch', 'Bauer', 'Richter', 'Klein', 'Wolf', 'Schröder', 'Neumann', 'Schwarz', 'Zimmermann',
    'Braun', 'Krüger', 'Hofmann', 'Hartmann', 'Lange', 'Schmitt', 'Werner', 'Schmitz', 'Krause', 'Meier',
    'Lehmann', 'Schmid', 'Schulze', 'Maier', 'Köhler', 'Herrmann', 'König', 'Walter', 'Mayer', 'Huber',
    'Kaiser', 'Fuchs', 'Peters', 'Lang', 'Scholz', 'Möller', 'Weiß', 'Jung', 'Hahn', 'Schubert',
    'Vogel', 'Friedrich', 'Keller', 'Günther', 'Frank', 'Berger', 'Winkler', 'Roth', 'Beck', 'Lorenz',
  ],
  doubleSurname: 0.05,
  freeEmailDomains: ['gmail.com', 'web.de', 'gmx.de', 't-online.de', 'outlook.de', 'yahoo.de'],
  companyPatterns: ['{last} & {last2} GmbH', '{word} {sector}', '{word} {sector} GmbH', '{last} {sector} AG', '{last} Gruppe', '{word} {sector} GmbH & Co. KG', '{last} & Söhne'],
  companyWords: ['Nord', 'Süd', 'Rhein', 'Alpen', 'Elbe', 'Hanse', 'Main', 'Spree', 'Weser', 'Brücke', 'Stern', 'Linde', 'Adler', 'Falke', 'Eiche', 'Burg', 'Mosel', 'Isar', 'Havel', 'Donau'],
  sectors: ['Logistik', 'Technik', 'Beratung', 'Lebensmittel', 'Ingenieurbau', 'Spedition', 'Gesundheit', 'Bildung', 'Immobilien', 'Handel', 'Versicherungen', 'Steuerberatung', 'Marketing', 'Energie', 'Software'],
  jobPatterns: ['{role} {area}', '{level} {role} {area}', 'Leitung {area}'],
  roles: ['Leiter', 'Referent', 'Sachbearbeiter', 'Teamleiter', 'Manager', 'Berater', 'Spezialist', 'Koordinator', 'Assistenz'],
  areas: ['Vertrieb', 'Marketing', 'Einkauf', 'Finanzen', 'Betrieb', 'IT', 'Personal', 'Logistik', 'Kundenservice', 'Produktmanagement', 'Geschäftsentwicklung', 'Recht', 'Controlling'],
  levels: ['Senior', 'Junior', 'Regionaler', 'Stellvertretender'],
  productPatterns: ['{kind}', '{kind} {edition}'],
  productKinds: ['Business-Tarif', 'Englischkurs online', 'Steuerberatung', 'Kfz-Versicherung', 'Vertriebs-CRM', 'Lohnbuchhaltung', 'Jahresmitgliedschaft', 'Baufinanzierung', 'Zahnzusatzversicherung', 'Vertriebscoaching', 'Fernstudium MBA', 'Solaranlage', 'Firmenkreditkarte', 'Krankenzusatzversicherung', 'Starterpaket', 'Franchise-Programm', 'Zeiterfassung', 'Kartenterminal', 'Excel-Kurs', 'Hausratversicherung'],
  editions: ['Pro', 'Plus', 'Premium', 'Basis', 'Business'],
  headlinePatterns: [
    'Jetzt per WhatsApp beraten lassen', '{product}: kostenloses Angebot', '{n} % Rabatt auf {product}', '{product} kennenlernen',
    '{product} noch heute sichern', 'Nur noch wenige Plätze: {product}', '{product}: 12 Monate zinsfrei', '{product} kostenlos testen',
    'Ihr Preis für {product} in Minuten', 'Schnelle Antworten zu {product}', 'Diese Woche {n} % auf {product}', 'Fragen zu {product}? Schreiben Sie uns',
  ],
};
