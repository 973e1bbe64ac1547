/** Words for contacts from the United States (en-US). */
import type { LocaleWords } from '../locale-words.js';

export const US: LocaleWords = {
  country: 'US',
  weight: 25,
  tld: 'com',
  linkGreeting: "Hi! I'd like to know more about",
  firstNames: [
    'James', 'John', 'Robert', 'Michael', 'William', 'David', 'Richard', 'Joseph', 'Thomas', 'Christopher',
    'Daniel', 'Matthew', 'Anthony', 'Mark', 'Steven', 'Andrew', 'Joshua', 'Kevin', 'Brian', 'Ryan',
    'Jason', 'Justin', 'Brandon', 'Tyler', 'Aaron', 'Nathan', 'Zachary', 'Kyle', 'Eric', 'Jacob',
    'Ethan', 'Noah', 'Logan', 'Dylan', 'Austin', 'Marcus', 'Trevor', 'Derek', 'Carlos', 'Luis',
    'Mary', 'Patricia', 'Jennifer', 'Linda', 'Elizabeth', 'Barbara', 'Susan', 'Jessica', 'Sarah', 'Karen',
    'Lisa', 'Nancy', 'Ashley', 'Emily', 'Michelle', 'Amanda', 'Melissa', 'Stephanie', 'Rebecca', 'Laura',
    'Megan', 'Rachel', 'Lauren', 'Hannah', 'Olivia', 'Madison', 'Brittany', 'Kayla', 'Samantha', 'Nicole',
    'Danielle', 'Courtney', 'Heather', 'Amber', 'Kimberly', 'Emma', 'Grace', 'Chloe', 'Maria', 'Jasmine',
  ],
  lastNames: [
    'Smith', 'Johnson', 'Williams', 'Brown', 'Jones', 'Garcia', 'Miller', 'Davis', 'Rodriguez', 'Martinez',
    'Hernandez', 'Lopez', 'Wilson', 'Anderson', 'Thomas', 'Taylor', 'Moore', 'Jackson', 'Martin', 'Lee',
    'Thompson', 'White', 'Harris', 'Clark', 'Lewis', 'Robinson', 'Walker', 'Young', 'Allen', 'King',
    'Wright', 'Scott', 'Torres', 'Nguyen', 'Hill', 'Flores', 'Green', 'Adams', 'Nelson', 'Baker',
    'Hall', 'Rivera', 'Campbell', 'Mitchell', 'Carter', 'Roberts', 'Phillips', 'Evans', 'Turner', 'Parker',
    'Collins', 'Edwards', 'Stewart', 'Morris', 'Murphy', 'Cook', 'Rogers', 'Morgan', 'Cooper', 'Reed',
  ],
  doubleSurname: 0,
  freeEmailDomains: ['gmail.com', 'yahoo.com', 'outlook.com', 'icloud.com', 'hotmail.com', 'aol.com'],
  companyPatterns: ['{last} & {last2}', '{word} {sector}', '{word} {sector} Inc.', '{last} {sector} LLC', '{last} Group', '{word} {sector} Co.', '{last}, {last2} and Partners'],
  companyWords: ['Summit', 'Pinnacle', 'Harbor', 'Keystone', 'Liberty', 'Evergreen', 'Northstar', 'Bluewater', 'Redwood', 'Frontier', 'Granite', 'Meridian', 'Ironwood', 'Lakeshore', 'Silverline', 'Crescent', 'Beacon', 'Patriot', 'Sterling', 'Cascade'],
  sectors: ['Logistics', 'Analytics', 'Consulting', 'Foods', 'Engineering', 'Freight', 'Health', 'Learning', 'Realty', 'Supply', 'Insurance', 'Accounting', 'Marketing', 'Energy', 'Software'],
  jobPatterns: ['{level} {area} {role}', '{area} {role}', '{role} of {area}'],
  roles: ['Manager', 'Director', 'Coordinator', 'Specialist', 'Analyst', 'Lead', 'Associate', 'Representative', 'Vice President'],
  areas: ['Sales', 'Marketing', 'Procurement', 'Finance', 'Operations', 'IT', 'Human Resources', 'Logistics', 'Customer Success', 'Product', 'Business Development', 'Legal', 'Partnerships'],
  levels: ['Senior', 'Junior', 'Regional', 'Global'],
  productPatterns: ['{kind}', '{kind} {edition}'],
  productKinds: ['Business Plan', 'Online English Course', 'Tax Advisory', 'Auto Insurance', 'Sales CRM', 'Payroll Software', 'Annual Membership', 'Home Warranty', 'Dental Plan', 'Sales Coaching', 'MBA Online', 'Solar Panels', 'Corporate Card', 'Health Plan', 'Starter Kit', 'Franchise Program', 'Time Tracking', 'Card Reader', 'Excel Bootcamp', 'Renters Insurance'],
  editions: ['Pro', 'Plus', 'Premium', 'Essentials', 'Enterprise'],
  headlinePatterns: [
    'Chat with an expert on WhatsApp', '{product}: get a free quote', 'Save {n}% on {product}', 'Meet {product}',
    'Get {product} today', 'Last seats: {product}', '{product}: no interest for 12 months', 'Try {product} free',
    'See your {product} price in minutes', 'Quick answers about {product}', '{n}% off {product} this week', 'Questions about {product}? Ask us',
  ],
};
